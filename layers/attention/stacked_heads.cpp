// StackedHeads (layers/attention/stacked_heads.h; seed 001 §3.2): stack the heads on a last axis,
// then tanh(·W^Hᵀ) and tanh(·W^Oᵀ) over that axis.
#include "layers/attention/stacked_heads.h"

#include "autograd/functions.h"

namespace relpos {

StackedHeads::StackedHeads(const StackedHeadsConfig& c) : heads_(c.num_heads), outputs_(c.outputs) {
  RELPOS_CHECK(heads_ > 0 && c.hidden > 0 && outputs_ > 0, "StackedHeads",
               "num_heads, hidden and outputs must be positive, got {}, {} and {}", heads_,
               c.hidden, outputs_);
  Generator& gen = c.gen != nullptr ? *c.gen : default_generator();
  w_h_ = register_module("w_h", std::make_shared<Linear>(heads_, c.hidden, false, c.dtype, gen));
  w_o_ = register_module("w_o", std::make_shared<Linear>(c.hidden, outputs_, false, c.dtype, gen));
}

Var StackedHeads::forward(const Var& heads) const {
  const auto scope = profile_scope();
  RELPOS_CHECK(heads.dim() == 4 && heads.size(1) == heads_, "StackedHeads",
               "expects heads [batch, {}, length, head_dim], got {}", heads_, heads.value().str());
  const int64_t batch = heads.size(0), len = heads.size(2), dim = heads.size(3);
  Var x = permute(heads, {0, 2, 3, 1});  // Stack(head_1, …, head_h): [B, L, Dh, H]
  x = tanh(w_h_->forward(x));            // [B, L, Dh, hidden]
  x = tanh(w_o_->forward(x));            // [B, L, Dh, outputs]
  return reshape(x, {batch, len, dim * outputs_});
}

}  // namespace relpos
