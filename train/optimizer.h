// Optimizer: updates a list of parameters from their gradients, as torch.optim.Optimizer. Each
// variant (sgd.cpp, adam.cpp, adamw.cpp, lra_adam.cpp) registers itself by its `type`; its state
// is named tensors per parameter ({"exp_avg", ...}) so checkpoints can save and restore it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/var.h"
#include "core/options.h"
#include "layers/registry.h"

namespace relpos {

class Optimizer {
 public:
  using State = std::map<std::string, Tensor>;

  Optimizer(std::vector<Var> params, double lr);
  virtual ~Optimizer() = default;

  // One update of every parameter that has a gradient; parameters without one are skipped.
  void step();
  // Drops every parameter's gradient (torch's set_to_none).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);
  // The learning rate of params()[index]: lr() times its group's factor (1 outside any group),
  // so a schedule's set_lr moves every group alike, as torch's schedulers scale each param
  // group's initial lr.
  double lr_of(size_t index) const { return lr_ * lr_factors_[index]; }
  // One factor per parameter, each finite and > 0.
  void set_lr_factors(std::vector<double> factors);
  const std::vector<Var>& params() const { return params_; }
  // Per parameter index, its named state tensors (empty until its first update).
  const std::vector<State>& state() const { return state_; }
  std::vector<State>& state() { return state_; }

 protected:
  // Updates params()[index] in place (Var::set_value) from `grad`, same shape and dtype.
  virtual void update(size_t index, Var& param, const Tensor& grad) = 0;

 private:
  std::vector<Var> params_;
  std::vector<State> state_;
  std::vector<double> lr_factors_;
  double lr_;
};

using OptimizerRegistry = Registry<Optimizer, const std::vector<Var>&, const Options&>;
OptimizerRegistry& optimizer_registry();

// Builds the optimizer named by options' `type`, then refuses any option it did not read.
// `lr_groups` needs the parameters' names (the overload below); over an empty list (a config's
// check at load) they are only read and checked.
std::shared_ptr<Optimizer> make_optimizer(const std::vector<Var>& params, const Options& options);
// The same over a model's named parameters (Module::named_parameters), with `lr_groups`:
//   lr_groups: ["PATTERN=LR", ...]
// Each parameter whose name matches PATTERN (a glob: *, ?, [...]; names such as
// encoder.layers.0.attn.positional.weight) learns at base rate LR instead of `lr`, scheduled as
// `lr` is. A pattern that matches no parameter, or a parameter that two patterns match, is an
// error naming them.
std::shared_ptr<Optimizer> make_optimizer(const std::vector<std::pair<std::string, Var>>& named,
                                          const Options& options);

struct LrGroup {
  std::string pattern;
  double lr = 0;
};
// optimizer.lr_groups, each entry checked: a non-empty pattern, an '=', LR finite and > 0.
std::vector<LrGroup> read_lr_groups(const Options& options);

// Reads `betas` as a two-element list (Adam family), checking each lies in [0, 1).
std::pair<double, double> read_betas(const Options& options, double beta1, double beta2);

}  // namespace relpos

// In a variant's .cpp: RELPOS_REGISTER_OPTIMIZER("name", Class);
// Class(const std::vector<Var>&, const Options&).
#define RELPOS_REGISTER_OPTIMIZER(name, Type)                                                    \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_optimizer_registered_, __LINE__) =             \
      ::relpos::optimizer_registry().add(                                                        \
          name, [](const std::vector<::relpos::Var>& params, const ::relpos::Options& options) { \
            return std::static_pointer_cast<::relpos::Optimizer>(                                \
                std::make_shared<Type>(params, options));                                        \
          })
