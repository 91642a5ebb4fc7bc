// The LRA optimizer (EXPERIMENTS.md "LRA hyperparameters"; upstream LRA uses flax.optim.Adam):
// Adam with β = (0.9, 0.98), ε = 1e-9 and decoupled weight decay p −= lr·wd·p (default wd 0.1;
// the image task sets 0). flax adds ε to the bias-corrected √v̂ and subtracts lr·wd·p_old after
// the Adam step; torch AdamW scales p by (1 − lr·wd) before it. Both use the old p, so the update
// is the same as AdamW: the decay is multiplied by the scheduled lr, not by wd alone. Only the
// defaults differ from `adamw`. Options: lr (required), betas, eps, weight_decay.
#include "train/adam.h"

namespace relpos {
namespace {

std::shared_ptr<Optimizer> make_lra_adam(const std::vector<Var>& params, const Options& options) {
  AdamConfig defaults;
  defaults.lr = options.require<double>("lr");
  defaults.beta2 = 0.98;
  defaults.eps = 1e-9;
  defaults.weight_decay = 0.1;
  defaults.decoupled = true;
  return std::make_shared<Adam>(params, read_adam_config(options, defaults));
}
const bool lra_adam_registered = optimizer_registry().add("lra_adam", make_lra_adam);

}  // namespace
}  // namespace relpos
