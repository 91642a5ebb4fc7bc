// AdamW (Loshchilov & Hutter, 2019) as torch.optim.AdamW: decoupled weight decay
// p −= lr·wd·p before the Adam step (adam.h). Options: lr (1e-3), betas ([0.9, 0.999]),
// eps (1e-8), weight_decay (1e-2), the torch defaults.
#include "train/adam.h"

namespace relpos {
namespace {

std::shared_ptr<Optimizer> make_adamw(const std::vector<Var>& params, const Options& options) {
  AdamConfig defaults;
  defaults.weight_decay = 1e-2;
  defaults.decoupled = true;
  return std::make_shared<Adam>(params, read_adam_config(options, defaults));
}
const bool adamw_registered = optimizer_registry().add("adamw", make_adamw);

}  // namespace
}  // namespace relpos
