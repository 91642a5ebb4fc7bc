// Optimizer base: the step loop over parameters with gradients, lr, state, and the registry.
#include "train/optimizer.h"

#include <cmath>

#include "core/error.h"

namespace relpos {

Optimizer::Optimizer(std::vector<Var> params, double lr)
    : params_(std::move(params)), state_(params_.size()), lr_(lr) {
  set_lr(lr);
  for (const Var& p : params_)
    RELPOS_CHECK(p.defined() && p.is_leaf(), "optimizer", "parameters must be defined leaves");
}

void Optimizer::set_lr(double lr) {
  RELPOS_CHECK(std::isfinite(lr) && lr >= 0, "optimizer", "lr must be finite and >= 0, got {}", lr);
  lr_ = lr;
}

void Optimizer::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Var& p = params_[i];
    if (!p.grad().defined()) continue;
    RELPOS_CHECK(p.grad().shape() == p.value().shape() && p.grad().dtype() == p.dtype(),
                 "optimizer", "gradient {} does not match parameter {}", p.grad().str(),
                 p.value().str());
    update(i, p, p.grad());
  }
}

void Optimizer::zero_grad() {
  for (Var& p : params_) p.zero_grad();
}

OptimizerRegistry& optimizer_registry() {
  static OptimizerRegistry registry("optimizer");
  return registry;
}

std::shared_ptr<Optimizer> make_optimizer(const std::vector<Var>& params, const Options& options) {
  auto type = options.require<std::string>("type");
  auto optimizer = optimizer_registry().make(type, params, options);
  options.check_all_used();
  return optimizer;
}

std::pair<double, double> read_betas(const Options& options, double beta1, double beta2) {
  auto betas = options.get_list<double>("betas", {beta1, beta2});
  RELPOS_CHECK(betas.size() == 2, options.where(), "betas needs two values, got {}", betas.size());
  for (double b : betas)
    RELPOS_CHECK(b >= 0 && b < 1, options.where(), "betas must lie in [0, 1), got {}", b);
  return {betas[0], betas[1]};
}

}  // namespace relpos
