// clip_grad_norm: total L2 norm over all gradients, then scale by max_norm/(norm + 1e-6) when
// above (torch.nn.utils.clip_grad_norm_, norm_type 2), on the gradients' device.
#include "train/clip.h"

#include <cmath>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

Tensor clip_grad_norm(const std::vector<Var>& params, double max_norm) {
  RELPOS_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be > 0, got {}", max_norm);
  std::vector<Tensor> squares;  // each gradient's sum of squares: f64, 0-d
  for (const Var& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    const Tensor g = cast(p.grad(), DType::f64);  // accumulate squares in f64 across tensors
    squares.push_back(sum(mul(g, g)));
  }
  if (squares.empty()) return Tensor::scalar(0.0, DType::f64);
  const Device device = squares.front().device();
  const Tensor norm = sqrt(sum(stack(squares, 0)));
  if (std::isinf(max_norm)) return norm;
  // min(1, max_norm / (norm + 1e-6)): a factor of exactly 1 leaves a gradient's bits unchanged.
  const Tensor coef =
      minimum(div(Tensor::scalar(max_norm, DType::f64, device), add_scalar(norm, 1e-6)),
              Tensor::scalar(1.0, DType::f64, device));
  for (Var p : params) {  // a Var is a handle: the copy shares the parameter's grad
    if (!p.defined() || !p.grad().defined()) continue;
    p.set_grad(mul(p.grad(), cast(coef, p.grad().dtype())));
  }
  return norm;
}

}  // namespace relpos
