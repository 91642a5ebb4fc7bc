// Dropout: x * mask / (1 - p) with a Bernoulli(1 - p) keep mask in training, identity in eval
// (torch.nn.Dropout). Masks come from the module's own Philox generator.
#pragma once

#include "core/generator.h"
#include "layers/init.h"
#include "layers/module.h"

namespace relpos {

class Dropout : public Module {
 public:
  // Draws from a generator forked from `parent` (layers/init.h) at construction.
  explicit Dropout(double p, Generator& parent = default_generator());

  // x: any shape -> same shape
  Var forward(const Var& x);

  double p() const { return p_; }
  Generator& generator() { return gen_; }

 private:
  double p_;
  Generator gen_;
};

}  // namespace relpos
