// clip_grad_norm: total L2 norm over all gradients, then scale by max_norm/(norm + 1e-6) when
// above (torch.nn.utils.clip_grad_norm_, norm_type 2), on the gradients' device.
#include "train/clip.h"

#include <cmath>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

Tensor clip_grad_norm(const std::vector<Var>& params, double max_norm) {
  RELPOS_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be > 0, got {}", max_norm);
  std::vector<Tensor> grads;
  for (const Var& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return Tensor::scalar(0.0, DType::f64);
  const Device device = grads.front().device();
  const Tensor norm = sqrt(sum_of_squares(grads));  // one pass over all gradients, in f64
  if (std::isinf(max_norm)) return norm;
  // min(1, max_norm / (norm + 1e-6)): a factor of exactly 1 leaves a gradient's bits unchanged.
  const Tensor coef =
      minimum(div(Tensor::scalar(max_norm, DType::f64, device), add_scalar(norm, 1e-6)),
              Tensor::scalar(1.0, DType::f64, device));
  const Tensor coef_f32 = cast(coef, DType::f32);
  for (Var p : params) {  // a Var is a handle: the copy shares the parameter's grad
    if (!p.defined() || !p.grad().defined()) continue;
    p.set_grad(mul(p.grad(), p.grad().dtype() == DType::f64 ? coef : coef_f32));
  }
  return norm;
}

}  // namespace relpos
