// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <vector>

#include "autograd/var.h"
#include "core/tensor.h"

namespace relpos {

// The L2 norm of all gradients together (parameters without a gradient are skipped), as a 0-d f64
// tensor on their device; when it exceeds max_norm (finite), every gradient is scaled by
// min(1, max_norm / (norm + 1e-6)). Everything runs on the device: nothing is read back, so a
// training step need not wait for it. Returns the norm before clipping.
Tensor clip_grad_norm(const std::vector<Var>& params, double max_norm);

}  // namespace relpos
