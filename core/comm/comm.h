// Collective communication between the processes of one training job (DESIGN §12), kept in core
// like a backend: MPI (OpenMPI) launches the job and carries CPU tensors; NCCL carries CUDA
// tensors when relpos is built with CUDA and MPI. A process that no MPI launcher started (mpirun
// sets OMPI_COMM_WORLD_SIZE), or a build without MPI, is a job of one: rank 0 of 1, and every
// collective returns at once. MPI starts on the first call here and ends at exit.
#pragma once

#include <memory>
#include <string>

#include "core/tensor.h"

namespace relpos::comm {

int rank();
int size();
// This process's rank among those on its host: rank r on a GPU host takes GPU local_rank mod
// the devices it sees.
int local_rank();
// The processes of this job on this host.
int local_size();
inline bool distributed() {
  return size() > 1;
}
// What carries the job's collectives, for `relpos --version`: the MPI library and what moves CUDA
// tensors, or that this build runs one process per job.
std::string backend();
// "rank 1 of 4" for messages; "" in a job of one.
std::string describe_rank();

// In place: every rank ends with the sum over all ranks, element by element. A contiguous
// tensor of f32, f64 or i64 on the CPU (MPI) or a GPU (NCCL; without it, through host copies).
// Every rank must call it with the same shape and dtype.
void all_reduce_sum(Tensor& t);
// In place: every rank ends with `root`'s values (same shape and dtype everywhere).
void broadcast(Tensor& t, int root = 0);
void barrier();

// A sum all-reduce in flight (all_reduce_sum_async); the tensor holds the sum once wait()
// returns. test() lets the library progress it (MPI moves non-blocking collectives only inside
// its calls) and says whether it is complete. Destroying one still in flight waits for it.
class Request {
 public:
  virtual ~Request() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
};
std::unique_ptr<Request> all_reduce_sum_async(Tensor& t);

// Ends every process of the job with `status` (MPI_Abort), so no rank waits for one that failed;
// in a job of one, exits.
[[noreturn]] void abort(int status);

}  // namespace relpos::comm
