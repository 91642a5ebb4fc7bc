// adam_update (core/ops.h): checks the four tensors and the coefficients, then one backend pass.
#include <cmath>

#include "core/backend.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

AdamUpdate adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                       const Tensor& exp_avg_sq, const AdamCoefficients& c) {
  const char* op = "adam_update";
  check_defined(op, param, "param");
  check_defined(op, grad, "grad");
  check_defined(op, exp_avg, "exp_avg");
  check_defined(op, exp_avg_sq, "exp_avg_sq");
  RELPOS_CHECK(param.dtype() == DType::f32 || param.dtype() == DType::f64, op,
               "expects f32 or f64 parameters, got {}", dtype_name(param.dtype()));
  check_same_dtype(op, {&param, &grad, &exp_avg, &exp_avg_sq});
  check_same_device(op, {&param, &grad, &exp_avg, &exp_avg_sq});
  for (const Tensor* t : {&grad, &exp_avg, &exp_avg_sq})
    RELPOS_CHECK(t->shape() == param.shape(), op, "shape {} does not match the parameter's {}",
                 t->str(), param.str());
  RELPOS_CHECK(std::isfinite(c.lr) && c.lr >= 0 && c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 &&
                   c.beta2 < 1 && std::isfinite(c.eps) && c.eps >= 0 &&
                   std::isfinite(c.weight_decay) && c.weight_decay >= 0 && c.step >= 1,
               op,
               "coefficients out of range: lr {}, betas ({}, {}), eps {}, weight_decay {}, step {}",
               c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.step);
  const Tensor p = param.contiguous(), g = grad.contiguous();
  const Tensor m = exp_avg.contiguous(), v = exp_avg_sq.contiguous();
  const AdamUpdate out{Tensor::empty(p.shape(), p.dtype(), p.device()),
                       Tensor::empty(p.shape(), p.dtype(), p.device()),
                       Tensor::empty(p.shape(), p.dtype(), p.device())};
  if (p.device().is_cpu())
    cpu::adam_update(p, g, m, v, c, out);
  else
    cuda::adam_update(p, g, m, v, c, out);
  return out;
}

}  // namespace relpos
