// Adam (Kingma & Ba, 2015) as torch.optim.Adam, shared by the `adam`, `adamw` and `lra_adam`
// registrations. With bias correction at per-parameter step t:
//   m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  p −= lr·(m/(1−β1^t)) / (√(v/(1−β2^t)) + ε).
// Weight decay is either L2 (g += wd·p, torch Adam) or decoupled (p −= lr·wd·p, torch AdamW,
// Loshchilov & Hutter 2019), applied to the parameter before the Adam step. Each parameter's
// update is one pass of core's adam_update (core/ops.h has the order of its roundings).
#pragma once

#include "train/optimizer.h"

namespace relpos {

struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled = false;  // true: AdamW's p −= lr·wd·p; false: Adam's g += wd·p
};

// Reads lr, betas, eps, weight_decay from options, with `defaults` where absent.
AdamConfig read_adam_config(const Options& options, AdamConfig defaults);

class Adam : public Optimizer {
 public:
  Adam(const std::vector<Var>& params, const AdamConfig& config);
  const AdamConfig& config() const { return config_; }

 protected:
  // State per parameter: "step" (f64 scalar on the CPU), "exp_avg", "exp_avg_sq".
  void update(size_t index, Var& param, const Tensor& grad) override;

 private:
  AdamConfig config_;
};

}  // namespace relpos
