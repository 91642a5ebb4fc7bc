// Positional "skew": relative position embeddings for causal, non-causal and cross attention
// from the diagonals of Q·E (seed 004). Declared here so tests reach the weight
// (layers/attention/skew.cpp).
#pragma once

#include <string>

#include "layers/attention/positional.h"

namespace relpos {

class SkewPositional final : public Positional {
 public:
  // Options: max_len (t3, the longest query or key sequence; default the layer's max_len).
  explicit SkewPositional(const AttentionOptions& opt);

  std::string name() const override { return "skew"; }
  void check_host(const Attention& attention) const override;
  // q: [B, H, Lq, D] -> S [B, H, Lq, Lk], S[i, j] = q_i · E[:, t3 - 1 - (j - p_i)], query i at
  // position p_i = i + in.query_offset(Lq, Lk).
  Var score_bias(const Var& q, int64_t key_len, const AttentionInputs& in) override;
  // The same S: query q, table row m = E[:, m] (the shift m - (t3 - 1) = p_i - j).
  PositionTable position_table(const Var& q, int64_t key_len, const AttentionInputs& in) override;
  int64_t max_keys() const override { return max_len_; }

  // [D, 2 t3 - 1]: column c embeds the relative shift t3 - 1 - c (most distant future first).
  Var& weight() { return weight_; }
  int64_t max_len() const { return max_len_; }

 private:
  // The position p_0 of query 0, once q's shape and every position are checked against max_len.
  int64_t checked_offset(const Var& q, int64_t key_len, const AttentionInputs& in) const;

  int64_t max_len_;
  Var weight_;
};

}  // namespace relpos
