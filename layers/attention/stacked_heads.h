// StackedHeads: the 2-D stacked multi-head combination of seed 001 §3.2,
//   MultiHead = Tanh(Tanh(Stack(head_1, …, head_h) W^H) W^O),
// a two-layer tanh MLP over the head axis applied to every feature of every token, in place of
// Concat(head_1, …, head_h)·W^O.
#pragma once

#include <memory>

#include "layers/linear.h"

namespace relpos {

struct StackedHeadsConfig {
  int64_t num_heads = 1;  // h
  int64_t hidden = 16;    // n_hidden of the seed
  int64_t outputs = 1;    // n_output of the seed
  DType dtype = DType::f32;
  Generator* gen = nullptr;  // default generator when null
};

class StackedHeads : public Module {
 public:
  // Parameters: w_h.weight [hidden, num_heads] (the seed's W^H) and w_o.weight [outputs, hidden]
  // (W^O), nn.Linear without bias, torch's init.
  explicit StackedHeads(const StackedHeadsConfig& config);

  // heads: [B, H, L, Dh] -> [B, L, Dh * outputs]; entry e * outputs + o of token l is
  // tanh(Σ_n W^O[o, n] tanh(Σ_h W^H[n, h] heads[b, h, l, e])).
  Var forward(const Var& heads) const;

  Linear& w_h() { return *w_h_; }
  Linear& w_o() { return *w_o_; }

 private:
  int64_t heads_, outputs_;
  std::shared_ptr<Linear> w_h_, w_o_;
};

}  // namespace relpos
