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
  RELPOS_CHECK(std::isfinite(c.eps) && c.eps > 0, options.where(),
               "eps must be finite and > 0, got {} (with 0, a parameter whose gradient is 0 "
               "would be updated by 0 / 0)",
               c.eps);
  RELPOS_CHECK(std::isfinite(c.weight_decay) && c.weight_decay >= 0, options.where(),
               "weight_decay must be finite and >= 0, got {}", c.weight_decay);
  return c;
}

Adam::Adam(const std::vector<Var>& params, const AdamConfig& config)
    : Optimizer(params, config.lr), config_(config) {}

void Adam::update(size_t index, Var& param, const Tensor& grad) {
  const AdamConfig& c = config_;
  State& s = state()[index];
  if (s.empty()) {
    s["step"] = Tensor::scalar(0, DType::f64);
    s["exp_avg"] = zeros_like(param.value());
    s["exp_avg_sq"] = zeros_like(param.value());
  }
  // The update count is host bookkeeping: 0-d states stay on the CPU (restore_optimizer), so
  // reading it makes no device wait.
  const double t = *cast(s["step"], DType::f64).data<double>() + 1;
  s["step"] = Tensor::scalar(t, DType::f64);
  // One pass over the parameter (core/ops.h adam_update has the formula, as torch computes it).
  const AdamUpdate next =
      adam_update(param.value(), grad, s["exp_avg"], s["exp_avg_sq"],
                  {lr_of(index), c.beta1, c.beta2, c.eps, c.weight_decay, c.decoupled, t});
  s["exp_avg"] = next.exp_avg;
  s["exp_avg_sq"] = next.exp_avg_sq;
  param.set_value(next.param);
}

namespace {
std::shared_ptr<Optimizer> make_adam(const std::vector<Var>& params, const Options& options) {
  return std::make_shared<Adam>(params, read_adam_config(options, AdamConfig{}));
}
const bool adam_registered = optimizer_registry().add("adam", make_adam);
}  // namespace

}  // namespace relpos
