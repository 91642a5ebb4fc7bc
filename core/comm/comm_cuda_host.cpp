// CUDA tensors in a build with MPI but without NCCL (core/comm/comm_detail.h): copied to the host,
// reduced or broadcast over MPI, copied back.
#include "core/comm/comm_detail.h"
#include "core/ops.h"

namespace relpos::comm::detail {

std::string cuda_transport() {
  return "host copies (built without NCCL)";
}

void cuda_all_reduce_sum(Tensor& t) {
  Tensor host = t.to(Device::cpu()).contiguous();
  mpi_all_reduce_sum(host);
  copy_(t, host.to(t.device()));
}

void cuda_broadcast(Tensor& t, int root) {
  Tensor host = t.to(Device::cpu()).contiguous();
  mpi_broadcast(host, root);
  copy_(t, host.to(t.device()));
}

}  // namespace relpos::comm::detail
