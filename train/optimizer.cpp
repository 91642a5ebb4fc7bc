// Optimizer base: the step loop over parameters with gradients, lr, state, and the registry.
#include "train/optimizer.h"

#include <fnmatch.h>

#include <cmath>
#include <string>

#include "core/error.h"

namespace relpos {

Optimizer::Optimizer(std::vector<Var> params, double lr)
    : params_(std::move(params)),
      state_(params_.size()),
      lr_factors_(params_.size(), 1.0),
      lr_(lr) {
  set_lr(lr);
  for (const Var& p : params_)
    RELPOS_CHECK(p.defined() && p.is_leaf(), "optimizer", "parameters must be defined leaves");
}

void Optimizer::set_lr(double lr) {
  RELPOS_CHECK(std::isfinite(lr) && lr >= 0, "optimizer", "lr must be finite and >= 0, got {}", lr);
  lr_ = lr;
}

void Optimizer::set_lr_factors(std::vector<double> factors) {
  RELPOS_CHECK(factors.size() == params_.size(), "optimizer",
               "{} learning-rate factors for {} parameters", factors.size(), params_.size());
  for (double f : factors)
    RELPOS_CHECK(std::isfinite(f) && f > 0, "optimizer",
                 "learning-rate factors must be finite and > 0, got {}", f);
  lr_factors_ = std::move(factors);
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

namespace {

// The optimizer of `type` with its groups read (and so counted as used) before the unread-key
// check.
std::shared_ptr<Optimizer> build(const std::vector<Var>& params, const Options& options,
                                 std::vector<LrGroup>& groups) {
  auto type = options.require<std::string>("type");
  auto optimizer = optimizer_registry().make(type, params, options);
  groups = read_lr_groups(options);
  options.check_all_used();
  return optimizer;
}

}  // namespace

std::shared_ptr<Optimizer> make_optimizer(const std::vector<Var>& params, const Options& options) {
  std::vector<LrGroup> groups;
  auto optimizer = build(params, options, groups);
  RELPOS_CHECK(groups.empty() || params.empty(), options.where(),
               "lr_groups match parameters by name: build the optimizer over named parameters");
  return optimizer;
}

std::shared_ptr<Optimizer> make_optimizer(const std::vector<std::pair<std::string, Var>>& named,
                                          const Options& options) {
  std::vector<Var> params;
  for (const auto& [name, p] : named) params.push_back(p);
  std::vector<LrGroup> groups;
  auto optimizer = build(params, options, groups);
  if (groups.empty()) return optimizer;
  const std::string where = options.where() + ".lr_groups";
  RELPOS_CHECK(optimizer->lr() > 0, where,
               "a group's rate is scheduled as a multiple of lr, so lr must be > 0, got {}",
               optimizer->lr());
  std::vector<double> factors(named.size(), 1.0);
  std::vector<const LrGroup*> group_of(named.size(), nullptr);
  for (const LrGroup& g : groups) {
    int64_t matched = 0;
    for (size_t i = 0; i < named.size(); ++i) {
      if (fnmatch(g.pattern.c_str(), named[i].first.c_str(), 0) != 0) continue;
      RELPOS_CHECK(group_of[i] == nullptr, where, "parameter '{}' matches both '{}' and '{}'",
                   named[i].first, group_of[i]->pattern, g.pattern);
      group_of[i] = &g;
      factors[i] = g.lr / optimizer->lr();
      ++matched;
    }
    RELPOS_CHECK(matched > 0, where, "'{}' matches no parameter (the names look like '{}')",
                 g.pattern, named.empty() ? std::string("none: no parameters") : named[0].first);
  }
  optimizer->set_lr_factors(std::move(factors));
  return optimizer;
}

std::vector<LrGroup> read_lr_groups(const Options& options) {
  std::vector<LrGroup> groups;
  const std::string where = options.where() + ".lr_groups";
  for (const std::string& entry : options.get_list<std::string>("lr_groups", {})) {
    const size_t eq = entry.rfind('=');
    RELPOS_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < entry.size(), where,
                 "each entry is PATTERN=LR (as \"*.positional.*=1e-2\"), got '{}'", entry);
    LrGroup g{entry.substr(0, eq), 0};
    const std::string rate = entry.substr(eq + 1);
    RELPOS_CHECK(parse_scalar(rate, g.lr) && g.lr > 0, where,
                 "'{}': the rate after '=' must be a finite number > 0, got '{}'", entry, rate);
    groups.push_back(std::move(g));
  }
  return groups;
}

std::pair<double, double> read_betas(const Options& options, double beta1, double beta2) {
  auto betas = options.get_list<double>("betas", {beta1, beta2});
  RELPOS_CHECK(betas.size() == 2, options.where(), "betas needs two values, got {}", betas.size());
  for (double b : betas)
    RELPOS_CHECK(b >= 0 && b < 1, options.where(), "betas must lie in [0, 1), got {}", b);
  return {betas[0], betas[1]};
}

}  // namespace relpos
