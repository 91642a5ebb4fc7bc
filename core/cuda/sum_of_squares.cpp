// CUDA sum of squares over a list of tensors: batches of kSquaresPerLaunch tensors, one partial
// per block each, then one pass over all partials (sum_of_squares_kernels.cu).
#include <algorithm>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/sum_of_squares_kernels.h"

namespace relpos::cuda {

void sum_of_squares(const std::vector<Tensor>& xs, const Tensor& out) {
  // xs: contiguous f32/f64 on out's device; out: 0-d f64.
  DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_of(out.device());
  const auto count = static_cast<int64_t>(xs.size());
  const int64_t launches = (count + kSquaresPerLaunch - 1) / kSquaresPerLaunch;
  const Tensor partial = Tensor::empty({launches * kSquaresBlocks}, DType::f64, out.device());
  for (int64_t l = 0; l < launches; ++l) {
    SquaresSlice slices[kSquaresPerLaunch];
    const int64_t first = l * kSquaresPerLaunch;
    const int n = static_cast<int>(std::min<int64_t>(kSquaresPerLaunch, count - first));
    for (int t = 0; t < n; ++t) {
      const Tensor& x = xs[first + t];
      slices[t] = {x.raw_data(), x.numel(), x.dtype() == DType::f64};
    }
    RELPOS_CUDA_CHECK(
        "sum_of_squares",
        launch_squares_batch(slices, n, partial.data<double>() + l * kSquaresBlocks, stream));
  }
  RELPOS_CUDA_CHECK("sum_of_squares", launch_sum_partials(partial.data<double>(), partial.numel(),
                                                          out.data<double>(), stream));
}

}  // namespace relpos::cuda
