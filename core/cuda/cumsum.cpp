// CUDA cumsum along one dim of a strided tensor: the positions off the scan dim become strided
// arguments (merged as on the CPU) and cumsum_kernels.cu scans each position's line.
#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/cumsum_kernels.h"
#include "core/cuda/strided_args.h"

namespace relpos::cuda {

void cumsum(const Tensor& x, int dim, bool reverse, const Tensor& out) {
  // x: any strides, out: contiguous, both of x's shape; scanned along `dim`.
  if (x.numel() == 0) return;
  DeviceGuard guard(out.device());
  // The positions: out and x with the scan dim removed (their element 0 along it).
  const Tensor x0 = x.select(dim, 0), out0 = out.select(dim, 0);
  RELPOS_CUDA_CHECK(
      "cumsum", launch_cumsum(x.dtype(), strided_args<2>("cumsum", {&out0, &x0}), x.size(dim),
                              x.stride(dim), out.stride(dim), reverse, stream_of(out.device())));
}

}  // namespace relpos::cuda
