// CUDA complex_mul: the positions (every index but the trailing (re, im) one) become strided
// arguments, merged as on the CPU, and complex_mul_kernels.cu multiplies a pair per thread.
#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/complex_mul_kernels.h"
#include "core/cuda/context.h"
#include "core/cuda/strided_args.h"

namespace relpos::cuda {

void complex_mul(const Tensor& a, const Tensor& b, bool conj_b, const Tensor& out) {
  // a, b: [..., 2] expanded to out's shape; out: [..., 2] contiguous.
  DeviceGuard guard(out.device());
  const Tensor out0 = out.select(-1, 0), a0 = a.select(-1, 0), b0 = b.select(-1, 0);
  RELPOS_CUDA_CHECK(
      "complex_mul",
      launch_complex_mul(out.dtype(), strided_args<3>("complex_mul", {&out0, &a0, &b0}),
                         a.stride(-1), b.stride(-1), conj_b, stream_of(out.device())));
}

}  // namespace relpos::cuda
