// CUDA tensors over NCCL (core/comm/comm_detail.h), in builds with CUDA and MPI: one NCCL
// communicator per job, bootstrapped by broadcasting rank 0's ncclUniqueId over MPI, on the GPU
// of the first tensor it carries. Collectives run on relpos's stream of that GPU, so they are
// ordered with every op around them and the host does not wait.
#include <nccl.h>

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

NcclWorld& nccl(Device device) {
  static NcclWorld world(device);
  RELPOS_CHECK(world.device == device.index, "comm",
               "NCCL runs on cuda:{} in this process, got a tensor on {}", world.device,
               device.str());
  return world;
}

}  // namespace

std::string cuda_transport() {
  return fmt::format("NCCL {}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
}

void cuda_all_reduce_sum(Tensor& t) {
  NcclWorld& w = nccl(t.device());
  const cuda::DeviceGuard guard(t.device());
  check(ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                      nccl_type(t.dtype()), ncclSum, w.comm, cuda::stream_of(t.device())),
        "ncclAllReduce");
}

void cuda_broadcast(Tensor& t, int root) {
  NcclWorld& w = nccl(t.device());
  const cuda::DeviceGuard guard(t.device());
  check(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                      nccl_type(t.dtype()), root, w.comm, cuda::stream_of(t.device())),
        "ncclBroadcast");
}

}  // namespace relpos::comm::detail
