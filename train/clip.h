// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <vector>

#include "autograd/var.h"

namespace relpos {

// The L2 norm of all gradients together (parameters without a gradient are skipped); when it
// exceeds max_norm, every gradient is scaled by max_norm / (norm + 1e-6). Returns the norm
// before clipping. The sums run on the gradients' device; only the total comes to the host.
double clip_grad_norm(const std::vector<Var>& params, double max_norm);

}  // namespace relpos
