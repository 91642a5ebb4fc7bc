// Entry points: layer_norm over the last dim (returning y, mean, rstd) and its backward.
// Leading dims are flattened into rows: x [..., D] is handled as [R, D].
#include <cmath>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

// weight or bias: undefined, or [D] on x's device with x's dtype.
void check_param(const char* op, const Tensor& p, const char* name, const Tensor& x) {
  if (!p.defined()) return;
  check_same_device(op, {&x, &p});
  check_same_dtype(op, {&x, &p});
  RELPOS_CHECK(p.shape() == Shape{x.size(-1)}, op, "{} must be [{}] for input {}, got {}", name,
               x.size(-1), x.str(), p.str());
}

// x: [..., D] -> [...].
Shape row_shape(const Tensor& x) {
  return Shape(x.shape().begin(), x.shape().end() - 1);
}

}  // namespace

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check_floating("layer_norm", x);
  RELPOS_CHECK(x.dim() >= 1 && x.size(-1) > 0, "layer_norm",
               "input must have a non-empty last dim, got {}", x.str());
  RELPOS_CHECK(std::isfinite(eps) && eps >= 0, "layer_norm", "eps must be >= 0, got {}", eps);
  check_param("layer_norm", weight, "weight", x);
  check_param("layer_norm", bias, "bias", x);
  const int64_t D = x.size(-1), R = x.numel() / D;
  LayerNormResult res{Tensor::empty(x.shape(), x.dtype(), x.device()),
                      Tensor::empty(row_shape(x), x.dtype(), x.device()),
                      Tensor::empty(row_shape(x), x.dtype(), x.device())};
  if (R == 0) return res;
  const Tensor x2 = x.contiguous().view({R, D});  // [R, D]
  const Tensor y2 = res.y.view({R, D}), mean = res.mean.view({R}), rstd = res.rstd.view({R});
  if (x.device().is_cpu())
    cpu::layer_norm(x2, weight, bias, eps, y2, mean, rstd);
  else
    cuda::layer_norm(x2, weight, bias, eps, y2, mean, rstd);
  return res;
}

LayerNormGrads layer_norm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, bool has_bias) {
  const char* op = "layer_norm_backward";
  check_floating(op, x);
  check_same_device(op, {&x, &gy, &mean, &rstd});
  check_same_dtype(op, {&x, &gy, &mean, &rstd});
  RELPOS_CHECK(x.dim() >= 1 && x.size(-1) > 0, op, "input must have a non-empty last dim, got {}",
               x.str());
  RELPOS_CHECK(gy.shape() == x.shape(), op, "gradient {} and input {} differ in shape", gy.str(),
               x.str());
  RELPOS_CHECK(mean.shape() == row_shape(x) && rstd.shape() == row_shape(x), op,
               "mean {} and rstd {} must be {} for input {}", mean.str(), rstd.str(),
               shape_str(row_shape(x)), x.str());
  check_param(op, weight, "weight", x);
  const int64_t D = x.size(-1), R = x.numel() / D;
  LayerNormGrads g;
  g.dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (weight.defined()) g.dweight = Tensor::empty({D}, x.dtype(), x.device());
  if (has_bias) g.dbias = Tensor::empty({D}, x.dtype(), x.device());
  if (R == 0) {  // no rows: the parameter gradients are empty sums
    if (g.dweight.defined()) fill_(g.dweight, 0);
    if (g.dbias.defined()) fill_(g.dbias, 0);
    return g;
  }
  const Tensor x2 = x.contiguous().view({R, D}), gy2 = gy.contiguous().view({R, D});  // [R, D]
  const Tensor m1 = mean.contiguous().view({R}), r1 = rstd.contiguous().view({R});    // [R]
  const Tensor dx2 = g.dx.view({R, D});
  if (x.device().is_cpu())
    cpu::layer_norm_backward(gy2, x2, m1, r1, weight, dx2, g.dweight, g.dbias);
  else
    cuda::layer_norm_backward(gy2, x2, m1, r1, weight, dx2, g.dweight, g.dbias);
  return g;
}

}  // namespace relpos
