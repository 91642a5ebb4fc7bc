// Positional "shaw": the clipped relative position embeddings of Shaw et al. 2018 (eqs. 4-5),
// for hosts that form scores (score_bias) and for kernelized ones (kernel_terms, seed 003).
// Declared here so tests reach the weight and the algorithm choice (layers/attention/shaw.cpp).
#pragma once

#include <string>
#include <utility>

#include "layers/attention/positional.h"

namespace relpos {

class ShawPositional final : public Positional {
 public:
  enum class Algorithm { automatic, naive, linear };

  // Options: window (k >= 1; default 16, the clipping distance of Shaw et al.'s experiments,
  // whose Table 3 finds results flat for k >= 2), algorithm (auto | naive | linear; auto:
  // the one with the smaller estimated memory).
  explicit ShawPositional(const AttentionOptions& opt);

  std::string name() const override { return "shaw"; }
  void check_host(const Attention& attention) const override;
  // q: [B, H, Lq, D] -> S [B, H, Lq, Lk], S[i, j] = q_i · w_clip(j - p_i, -k, k), query i at
  // position p_i = i + in.query_offset(Lq, Lk).
  Var score_bias(const Var& q, int64_t key_len, const AttentionInputs& in) override;
  // The same S: query q, table row m = w_{k - (m - k)} (W's rows reversed), distances clipped
  // to [-k, k].
  PositionTable position_table(const Var& q, int64_t key_len, const AttentionInputs& in) override;
  // phi_q: [B, H, Lq, D], v: [B, H, Lk, Dv] -> {S_rel·V [B, H, Lq, Dv], S_rel·1 [B, H, Lq, 1]}
  // with S_rel[i, j] = phi(q)_i · w_clip(j - p_i, -k, k), zero for blocked pairs.
  std::pair<Var, Var> kernel_terms(const Var& phi_q, const Var& v,
                                   const AttentionInputs& in) override;

  // The algorithm kernel_terms runs for these sizes: the configured one, or under `auto` the
  // one with the smaller estimated memory (seed 003 §IV).
  Algorithm algorithm_for(int64_t q_len, int64_t k_len, int64_t value_dim) const;

  Var& weight() { return weight_; }  // [2k + 1, D]: row r embeds the clipped distance r - k
  int64_t window() const { return window_; }

 private:
  int64_t window_;
  Algorithm algorithm_;
  Var weight_;
};

}  // namespace relpos
