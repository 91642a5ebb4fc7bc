// Adam with L2 weight decay added to the gradient, as torch.optim.Adam (adam.h for the update).
// Options: lr (1e-3), betas ([0.9, 0.999]), eps (1e-8), weight_decay (0).
#include "train/adam.h"

#include <cmath>
#include <tuple>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

AdamConfig read_adam_config(const Options& options, AdamConfig defaults) {
  AdamConfig c = defaults;
  c.lr = options.get<double>("lr", defaults.lr);
  std::tie(c.beta1, c.beta2) = read_betas(options, defaults.beta1, defaults.beta2);
  c.eps = options.get<double>("eps", defaults.eps);
  c.weight_decay = options.get<double>("weight_decay", defaults.weight_decay);
  RELPOS_CHECK(std::isfinite(c.eps) && c.eps >= 0, options.where(),
               "eps must be finite and >= 0, got {}", c.eps);
  RELPOS_CHECK(std::isfinite(c.weight_decay) && c.weight_decay >= 0, options.where(),
               "weight_decay must be finite and >= 0, got {}", c.weight_decay);
  return c;
}

Adam::Adam(const std::vector<Var>& params, const AdamConfig& config)
    : Optimizer(params, config.lr), config_(config) {}

void Adam::update(size_t index, Var& param, const Tensor& grad) {
  const AdamConfig& c = config_;
  Tensor p = param.value();
  Tensor g = grad;
  if (c.weight_decay != 0) {
    if (c.decoupled)
      p = mul_scalar(p, 1 - lr_of(index) * c.weight_decay);
    else
      g = add(g, mul_scalar(p, c.weight_decay));
  }
  State& s = state()[index];
  if (s.empty()) {
    s["step"] = Tensor::scalar(0, DType::f64);
    s["exp_avg"] = zeros_like(p);
    s["exp_avg_sq"] = zeros_like(p);
  }
  // The update count is host bookkeeping: 0-d states stay on the CPU (restore_optimizer), so
  // reading it makes no device wait.
  double t = *cast(s["step"], DType::f64).data<double>() + 1;
  s["step"] = Tensor::scalar(t, DType::f64);
  Tensor m = add(mul_scalar(s["exp_avg"], c.beta1), mul_scalar(g, 1 - c.beta1));
  Tensor v = add(mul_scalar(s["exp_avg_sq"], c.beta2), mul_scalar(mul(g, g), 1 - c.beta2));
  s["exp_avg"] = m;
  s["exp_avg_sq"] = v;
  double bias1 = 1 - std::pow(c.beta1, t);
  double bias2 = 1 - std::pow(c.beta2, t);
  // denom = √v / √(1−β2^t) + ε, then p −= (lr / (1−β1^t))·m / denom, as torch computes it.
  Tensor denom = add_scalar(mul_scalar(sqrt(v), 1 / std::sqrt(bias2)), c.eps);
  param.set_value(sub(p, mul_scalar(div(m, denom), lr_of(index) / bias1)));
}

namespace {
std::shared_ptr<Optimizer> make_adam(const std::vector<Var>& params, const Options& options) {
  return std::make_shared<Adam>(params, read_adam_config(options, AdamConfig{}));
}
const bool adam_registered = optimizer_registry().add("adam", make_adam);
}  // namespace

}  // namespace relpos
