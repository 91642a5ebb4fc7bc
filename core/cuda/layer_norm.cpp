// CUDA backend: layer norm over the last dim of x: [R, D] and its backward; allocates the f64
// scratch for the per-block dweight/dbias partial sums and launches layer_norm_kernels.cu.
#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/layer_norm_kernels.h"

namespace relpos::cuda {

namespace {

// An optional tensor's data: null when undefined (no weight, gradient not wanted).
void* data_or_null(const Tensor& t) {
  return t.defined() ? t.raw_data() : nullptr;
}

}  // namespace

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& y, const Tensor& mean, const Tensor& rstd) {
  DeviceGuard guard(y.device());
  const Tensor xc = x.contiguous();                                     // x: [R, D]
  const Tensor wc = weight.defined() ? weight.contiguous() : Tensor();  // [D]
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();      // [D]
  RELPOS_CUDA_CHECK("layer_norm",
                    launch_layer_norm(x.dtype(), xc.raw_data(), data_or_null(wc), data_or_null(bc),
                                      eps, y.raw_data(), mean.raw_data(), rstd.raw_data(),
                                      x.size(0), x.size(1), stream_of(y.device())));
}

void layer_norm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, const Tensor& dx, const Tensor& dweight,
                         const Tensor& dbias) {
  DeviceGuard guard(dx.device());
  const Tensor gc = gy.contiguous(), xc = x.contiguous();               // [R, D]
  const Tensor mc = mean.contiguous(), rc = rstd.contiguous();          // [R]
  const Tensor wc = weight.defined() ? weight.contiguous() : Tensor();  // [D]
  const int64_t R = x.size(0), D = x.size(1);
  // Partial sums per row block: [parts, D] f64 for each wanted gradient.
  const int64_t parts = layer_norm_backward_parts(R, D);
  const Tensor part_w =
      dweight.defined() ? Tensor::empty({parts, D}, DType::f64, dx.device()) : Tensor();
  const Tensor part_b =
      dbias.defined() ? Tensor::empty({parts, D}, DType::f64, dx.device()) : Tensor();
  RELPOS_CUDA_CHECK(
      "layer_norm_backward",
      launch_layer_norm_backward(
          x.dtype(), gc.raw_data(), xc.raw_data(), mc.raw_data(), rc.raw_data(), data_or_null(wc),
          dx.raw_data(), data_or_null(dweight), data_or_null(dbias),
          part_w.defined() ? part_w.data<double>() : nullptr,
          part_b.defined() ? part_b.data<double>() : nullptr, R, D, stream_of(dx.device())));
}

}  // namespace relpos::cuda
