// A user's own attention variant (sigmoid_attention.cpp, one file) in a program built against an
// installed relpos: the registry finds it by name like the built-in ones, multi-head attention
// builds it with a relative positional encoding, and a training step runs through it.
#include <cstdio>

#include "autograd/functions.h"
#include "layers/attention/multi_head.h"
#include "layers/registry.h"

using namespace relpos;

int main() {
  MultiHeadAttentionConfig c;
  c.model_dim = 16;
  c.num_heads = 2;
  c.max_len = 12;
  c.attention = Options("attention").set("type", "sigmoid");
  MultiHeadAttention layer(c);
  Generator gen(1);
  Var x(randn({3, 12, 16}, gen));  // [B, L, d]
  Var loss = mean(layer.forward(x) * layer.forward(x));
  loss.backward();
  size_t with_gradient = 0;
  for (const Var& p : layer.parameters()) with_gradient += p.grad().defined() ? 1 : 0;
  std::printf(
      "attention '%s' among %zu registered variants: loss %.6f, %zu of %zu parameters "
      "with a gradient\n",
      layer.attention().name().c_str(), attention_registry().names().size(), loss.value().item(),
      with_gradient, layer.parameters().size());
  return layer.attention().name() == "sigmoid" && with_gradient == layer.parameters().size() ? 0
                                                                                             : 1;
}
