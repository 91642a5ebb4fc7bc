// FeedForward block (layers/feed_forward.h).
#include "layers/feed_forward.h"

#include "autograd/functions.h"

namespace relpos {

Activation activation_from_name(const std::string& name) {
  if (name == "gelu") return Activation::gelu;
  if (name == "relu") return Activation::relu;
  fail("FeedForward", "unknown activation '{}'; known: gelu, relu", name);
}

FeedForward::FeedForward(int64_t dim, int64_t hidden, Activation activation, double dropout,
                         DType dtype, Generator& gen)
    : activation_(activation) {
  // Registration order fixes the parameter order: fc1.weight, fc1.bias, fc2.weight, fc2.bias.
  fc1_ = register_module("fc1", std::make_shared<Linear>(dim, hidden, true, dtype, gen));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(dropout, gen));
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden, dim, true, dtype, gen));
}

Var FeedForward::forward(const Var& x) {
  const auto scope = profile_scope();
  // x: [..., dim] -> h: [..., hidden] -> [..., dim]
  const Var h = fc1_->forward(x);
  const int64_t hidden = h.size(-1);
  Shape out_shape = x.shape();
  out_shape.back() = fc2_->weight().size(0);
  const Var y = activation_dropout_linear(reshape(h, {h.numel() / hidden, hidden}), activation_,
                                          dropout_->p(), dropout_->generator(),
                                          dropout_->is_training(), fc2_->weight(), fc2_->bias());
  return reshape(y, out_shape);
}

}  // namespace relpos
