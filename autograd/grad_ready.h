// A hook the backward engine calls for each leaf whose gradient of the current pass is complete
// (every contribution accumulated) while the pass goes on, as PyTorch DDP's per-parameter hooks:
// data-parallel training starts reducing a bucket of gradients there, overlapping communication
// with the rest of backward (train/gradient_reducer.h). A leaf no path reached is not reported.
#pragma once

#include <functional>

namespace relpos {

struct VarImpl;
using GradReadyHook = std::function<void(VarImpl& leaf)>;

// Installs `hook` for the backward passes this thread runs in the scope (nested scopes replace
// it until they end).
class GradReadyScope {
 public:
  explicit GradReadyScope(GradReadyHook hook);
  ~GradReadyScope();
  GradReadyScope(const GradReadyScope&) = delete;
  GradReadyScope& operator=(const GradReadyScope&) = delete;

 private:
  GradReadyHook previous_;
};

// The hook in force on this thread (empty: none).
const GradReadyHook& grad_ready_hook();

}  // namespace relpos
