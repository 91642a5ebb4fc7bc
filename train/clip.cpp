// clip_grad_norm: total L2 norm over all gradients, then scale by max_norm/(norm + 1e-6) when
// above (torch.nn.utils.clip_grad_norm_, norm_type 2).
#include "train/clip.h"

#include <cmath>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

double clip_grad_norm(const std::vector<Var>& params, double max_norm) {
  RELPOS_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be > 0, got {}", max_norm);
  double total = 0;
  for (const Var& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = cast(p.grad(), DType::f64);  // accumulate squares in f64 across tensors
    total += sum(mul(g, g)).item();
  }
  double norm = std::sqrt(total);
  double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    for (Var p : params) {  // a Var is a handle: the copy shares the parameter's grad
      if (!p.defined() || !p.grad().defined()) continue;
      p.set_grad(mul_scalar(p.grad(), coef));
    }
  }
  return norm;
}

}  // namespace relpos
