// IndexAttention: index-based scaled dot-product attention (ISDPA, seed 001 §2, Algorithm 1).
// Its input is token ids, not q/k/v, so it is a Module of its own (not in the attention
// registry): Meta = F·W (one row per vocabulary entry) and Pos = P·W are computed once per call,
// and token rows are looked up by id instead of projecting every token. Equal to multi-head
// attention over f = F[ids] + P with the same W's. Worth it for small vocabularies (characters):
// the Meta^Q·Meta^Kᵀ table is [H, vocab, vocab].
#pragma once

#include <memory>

#include "layers/embedding.h"
#include "layers/linear.h"

namespace relpos {

// The heads of softmax attention over the inputs f_i = table[ids_i] + positions_i, computed
// index-first (seed 001 Algorithm 1): each projection W (with its bias b) is applied once to the
// table, Meta = table·Wᵀ + b [V, H·Dh], and once to the positions, Pos = positions·Wᵀ [L, H·Dh];
// QKᵀ is the sum of the four gathered terms and the values are gathered rows. Equal to
// softmax(q·kᵀ / sqrt(Dh)) v with q = W_q f + b_q (and k, v likewise), blocked pairs as masks.h.
//   ids [B, L] i32/i64 in [0, V); table [V, d]; positions [>= L, d] or undefined (none);
//   key_mask [B, L] u8 or undefined; causal as AttentionInputs -> [B, H, L, Dh]
Var index_first_heads(const Tensor& ids, const Var& table, const Var& positions, const Linear& wq,
                      const Linear& wk, const Linear& wv, int64_t heads, const Tensor& key_mask,
                      bool causal);

struct IndexAttentionConfig {
  int64_t vocab = 0;      // ids lie in [0, vocab); id 0 is padding (its row is zero, frozen)
  int64_t model_dim = 0;  // d, a multiple of num_heads
  int64_t num_heads = 1;
  int64_t max_len = 0;  // rows of the sinusoidal table P
  DType dtype = DType::f32;
  Generator* gen = nullptr;  // default generator when null
};

class IndexAttention : public Module {
 public:
  // Parameters (torch names): embedding.weight F [vocab, d] (N(0, 1), row 0 zero, as
  // nn.Embedding(padding_idx=0)), q_proj/k_proj/v_proj.weight [d, d] (nn.Linear init, no bias).
  // Buffer: pe, the sinusoidal table P [max_len, d] of layers/positional/absolute.h.
  explicit IndexAttention(const IndexAttentionConfig& config);

  // ids [B, L] i32/i64 in [0, vocab), L <= max_len; key_mask [B, L] u8 (1 = real key) or
  // undefined; causal as AttentionInputs -> per-head outputs [B, H, L, d / H].
  Var heads(const Tensor& ids, const Tensor& key_mask = {}, bool causal = false);
  // The heads concatenated: [B, L, d].
  Var forward(const Tensor& ids, const Tensor& key_mask = {}, bool causal = false);

  Embedding& embedding() { return *embedding_; }
  Linear& q_proj() { return *q_proj_; }
  Linear& k_proj() { return *k_proj_; }
  Linear& v_proj() { return *v_proj_; }
  const Tensor& positions() const { return pe_; }  // P: [max_len, d]
  int64_t num_heads() const { return heads_; }
  int64_t head_dim() const { return head_dim_; }

 private:
  void check_inputs(const Tensor& ids, const Tensor& key_mask) const;

  int64_t vocab_, model_dim_, heads_, head_dim_, max_len_;
  std::shared_ptr<Embedding> embedding_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_;
  Tensor pe_;
};

}  // namespace relpos
