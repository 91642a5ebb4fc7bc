// FeedForward: the transformer position-wise MLP, fc2(dropout(act(fc1(x)))) with act GELU
// (exact, erf form) or ReLU; submodules "fc1" [hidden, dim] and "fc2" [dim, hidden]. Between the
// passes it keeps fc1's output, not the activation and its mask (activation_dropout_linear).
#pragma once

#include <memory>
#include <string>

#include "autograd/functions.h"
#include "layers/dropout.h"
#include "layers/linear.h"

namespace relpos {

// "gelu" or "relu" (autograd/functions.h Activation); anything else fails listing the known names.
Activation activation_from_name(const std::string& name);

class FeedForward : public Module {
 public:
  FeedForward(int64_t dim, int64_t hidden, Activation activation = Activation::gelu,
              double dropout = 0.0, DType dtype = DType::f32, Generator& gen = default_generator());

  // x: [..., dim] -> [..., dim]
  Var forward(const Var& x);

  Linear& fc1() { return *fc1_; }
  Linear& fc2() { return *fc2_; }

 private:
  Activation activation_;
  std::shared_ptr<Linear> fc1_;
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<Linear> fc2_;
};

}  // namespace relpos
