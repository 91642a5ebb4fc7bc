// CUDA tensors in a build with MPI but without NCCL (core/comm/comm_detail.h): copied to the host,
// reduced or broadcast over MPI, copied back.
#include "core/comm/comm_detail.h"

namespace relpos::comm::detail {

std::string cuda_transport() {
  return "host copies (built without NCCL)";
}

void cuda_all_reduce_sum(Tensor& t) {
  host_copy_all_reduce_sum(t);
}

void cuda_broadcast(Tensor& t, int root) {
  host_copy_broadcast(t, root);
}

}  // namespace relpos::comm::detail
