// Dropout layer (layers/dropout.h).
#include "layers/dropout.h"

#include "autograd/functions.h"

namespace relpos {

Dropout::Dropout(double p, Generator& parent) : p_(p), gen_(fork_generator(parent)) {
  RELPOS_CHECK(p_ >= 0 && p_ < 1, "Dropout", "p must be in [0, 1), got {}", p_);
  register_generator("generator", gen_);
}

Var Dropout::forward(const Var& x) {
  const auto scope = profile_scope();
  return dropout(x, p_, gen_, is_training());
}

}  // namespace relpos
