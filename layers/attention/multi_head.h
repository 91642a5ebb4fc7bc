// MultiHeadAttention: the layer models use. Projects inputs to heads, lets the positional
// encoding rewrite q and k, runs the attention variant, adds the encoding's output term (FastRPB
// W·V, before the output projection), merges heads and projects out:
//   x_q [B, Lq, d_model], x_kv [B, Lk, d_model] -> [B, Lq, d_model]
// Parameters (torch names): q_proj, k_proj, v_proj [qkv_dim, model_dim], out_proj [model_dim,
// qkv_dim] (Linear, xavier-uniform weights, bias optional), then attention.* and positional.* for
// whatever the variant and encoding own. With head_combiner "stacked" the heads are combined by
// seed 001's Tanh(Tanh(Stack(heads) W^H) W^O) (combiner.w_h, combiner.w_o) instead of
// Concat(heads)·out_proj.
#pragma once

#include <memory>

#include "layers/attention/attention.h"
#include "layers/attention/positional.h"
#include "layers/attention/stacked_heads.h"
#include "layers/linear.h"

namespace relpos {

struct MultiHeadAttentionConfig {
  int64_t model_dim = 0;
  int64_t num_heads = 1;
  int64_t qkv_dim = 0;  // width of q, k, v over all heads; 0: model_dim (LRA Image uses less)
  Options attention{"attention"};    // {type: softmax} when empty
  Options positional{"positional"};  // no relative positions when empty
  int64_t max_len = 0;               // longest key sequence (sizes positional tables)
  int64_t special_front = 0;         // CLS-like tokens before the content (AttentionOptions)
  int64_t special_back = 0;          // SEP-like tokens after it
  bool bias = false;                 // biases of the four projections
  double dropout = 0;                // the variant's `dropout` unless its mapping has one
  AttentionDirection direction = AttentionDirection::unknown;  // the model's (AttentionOptions)
  // How the heads [B, H, L, Dh] become [B, L, model_dim]: "concat" (out_proj) or "stacked" (a
  // tanh MLP over the head axis, stacked_hidden wide, with model_dim / Dh outputs per feature).
  std::string head_combiner = "concat";
  int64_t stacked_hidden = 16;
  DType dtype = DType::f32;
  Generator* gen = nullptr;
  // An encoding built once and used by several layers (SPE shared across layers, as the LRA
  // reference runs it); when set, `positional` must be empty. The shared module is registered
  // under every layer and listed once by named_parameters() (under its first name).
  std::shared_ptr<Positional> shared_positional = nullptr;
};

// One attention call with its positional hooks, as MultiHeadAttention makes it: the encoding
// rewrites q and k, the variant runs (asking the encoding for a score bias or kernel terms), and
// the encoding's output term is added. q, k: [B, H, L, D], v: [B, H, Lk, Dv] -> [B, H, Lq, Dv].
Var attend(Attention& attention, Positional* positional, const Var& q, const Var& k, const Var& v,
           AttentionInputs in);

class MultiHeadAttention : public Module {
 public:
  explicit MultiHeadAttention(const MultiHeadAttentionConfig& config);

  // x_q [B, Lq, d_model] attends x_kv [B, Lk, d_model] under `in` (key mask, causality,
  // positions, window; its `positional` is this layer's encoding, whatever the caller set).
  Var forward(const Var& x_q, const Var& x_kv, AttentionInputs in);
  // Cross attention; key_mask [B, Lk] u8 (1 = real key) or undefined.
  Var forward(const Var& x_q, const Var& x_kv, const Tensor& key_mask = {}, bool causal = false) {
    return forward(x_q, x_kv, AttentionInputs{key_mask, causal, nullptr});
  }
  // Self attention.
  Var forward(const Var& x, const Tensor& key_mask = {}, bool causal = false) {
    return forward(x, x, key_mask, causal);
  }
  // Self attention of tokens whose inputs are x_i = table[ids_i] + positions_i, computed
  // index-first (ISDPA, seed 001; index_first_heads): equal to forward(x, key_mask, causal). Only
  // for softmax attention without dropout on its weights and without a relative encoding;
  // refused otherwise. ids [B, L]; table [V, d]; positions [>= L, d] or undefined -> [B, L, d]
  Var forward_index_first(const Tensor& ids, const Var& table, const Var& positions,
                          const Tensor& key_mask, bool causal);

  Attention& attention() { return *attention_; }
  Positional* positional() { return positional_.get(); }
  int64_t num_heads() const { return heads_; }
  int64_t head_dim() const { return head_dim_; }

 private:
  Var combine(const Var& heads) const;  // [B, H, L, Dh] -> [B, L, model_dim]

  int64_t model_dim_, heads_, head_dim_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;  // out_proj_: concat only
  std::shared_ptr<StackedHeads> combiner_;                       // stacked only
  std::shared_ptr<Attention> attention_;
  std::shared_ptr<Positional> positional_;
};

}  // namespace relpos
