// CUDA tensors over NCCL (core/comm/comm_detail.h), in builds with CUDA and MPI: one NCCL
// communicator per job, bootstrapped by broadcasting rank 0's ncclUniqueId over MPI, on the GPU
// of the first tensor it carries. Collectives run on relpos's stream of that GPU, so they are
// ordered with every op around them and the host does not wait. Ranks that share a GPU (NCCL
// refuses them) move CUDA tensors through host copies over MPI instead.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/comm_detail.h"
#include "core/cuda/context.h"
#include "core/error.h"

namespace relpos::comm::detail {

namespace {

void check(ncclResult_t result, const char* call) {
  RELPOS_CHECK(result == ncclSuccess, "comm", "{} failed: {}", call, ncclGetErrorString(result));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i64:
      return ncclInt64;
    default:
      fail("comm", "collectives take f32, f64 or i64 tensors, got {}", dtype_name(dtype));
  }
}

struct NcclWorld {
  ncclComm_t comm = nullptr;
  int device = -1;

  explicit NcclWorld(Device on) : device(on.index) {
    ncclUniqueId id;
    if (rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    RELPOS_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "comm",
                 "MPI_Bcast of the NCCL id failed");
    const cuda::DeviceGuard guard(on);
    check(ncclCommInitRank(&comm, size(), id, rank()), "ncclCommInitRank");
  }
  ~NcclWorld() {
    if (comm != nullptr) ncclCommDestroy(comm);
  }
};

// Whether two ranks of the job run on one GPU (by the devices' UUIDs, gathered over MPI).
bool ranks_share_a_gpu(Device on) {
  cudaDeviceProp prop{};
  RELPOS_CHECK(cudaGetDeviceProperties(&prop, on.index) == cudaSuccess, "comm",
               "cudaGetDeviceProperties failed for {}", on.str());
  constexpr int kUuid = sizeof(prop.uuid.bytes);
  std::vector<char> all(static_cast<size_t>(size()) * kUuid);
  RELPOS_CHECK(MPI_Allgather(prop.uuid.bytes, kUuid, MPI_BYTE, all.data(), kUuid, MPI_BYTE,
                             MPI_COMM_WORLD) == MPI_SUCCESS,
               "comm", "MPI_Allgather of the GPU ids failed");
  std::set<std::string> seen;
  for (int r = 0; r < size(); ++r)
    if (!seen.insert(std::string(all.data() + r * kUuid, kUuid)).second) return true;
  return false;
}

// How this job moves CUDA tensors, chosen at its first collective (every rank takes part): NCCL
// between distinct GPUs, host copies over MPI when ranks share one (NCCL refuses that).
struct CudaTransport {
  bool host_copies = false;
  std::unique_ptr<NcclWorld> world;

  explicit CudaTransport(Device on) {
    host_copies = ranks_share_a_gpu(on);
    if (!host_copies) {
      world = std::make_unique<NcclWorld>(on);
    } else if (rank() == 0) {
      std::fprintf(stderr,
                   "relpos: note: ranks share a GPU, which NCCL refuses; CUDA tensors are "
                   "reduced through host copies over MPI\n");
    }
  }
};

CudaTransport& transport(Device device) {
  static CudaTransport t(device);
  RELPOS_CHECK(t.host_copies || t.world->device == device.index, "comm",
               "NCCL runs on cuda:{} in this process, got a tensor on {}", t.world->device,
               device.str());
  return t;
}

}  // namespace

std::string cuda_transport() {
  return fmt::format("NCCL {}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
}

void cuda_all_reduce_sum(Tensor& t) {
  CudaTransport& via = transport(t.device());
  if (via.host_copies) return host_copy_all_reduce_sum(t);
  const cuda::DeviceGuard guard(t.device());
  check(ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                      nccl_type(t.dtype()), ncclSum, via.world->comm, cuda::stream_of(t.device())),
        "ncclAllReduce");
}

void cuda_broadcast(Tensor& t, int root) {
  CudaTransport& via = transport(t.device());
  if (via.host_copies) return host_copy_broadcast(t, root);
  const cuda::DeviceGuard guard(t.device());
  check(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                      nccl_type(t.dtype()), root, via.world->comm, cuda::stream_of(t.device())),
        "ncclBroadcast");
}

}  // namespace relpos::comm::detail
