// rel_xl: Transformer-XL relative attention (Dai et al. 2019, §3.3 eq. for A^rel, terms (a)–(d);
// seed 000, App. B for the rel-shift). Keys are [memory (M); segment (Lq)], so Lk = M + Lq and
// query i sits at key position M + i. Declared here so the tests can reach rel_shift and the
// parameters; built by name ("rel_xl") from the attention registry.
#pragma once

#include <memory>
#include <string>

#include "layers/attention/attention.h"
#include "layers/linear.h"

namespace relpos {

// The rel-shift of Transformer-XL (seed 000, App. B): x [..., Lq, Lk] with Lk >= Lq, column c of
// row i holding the term for relative distance Lk - 1 - c, becomes out [..., Lq, Lk] with
//   out[i, j] = x[i, j + Lq - 1 - i]   for j <= (Lk - Lq) + i  (distance (M + i) - j),
// a zero at j = M + i + 1 and spill-over from row i + 1 beyond (the causal mask discards both).
// Composed as TXL does: pad one zero column in front, view as [Lk + 1, Lq], drop the first row,
// view back.
Var rel_shift(const Var& x);

// The reference's dropout on the sinusoidal distance embedding (MemTransformerLM: pos_emb =
// self.drop(pos_emb), read by every layer's r_net): one keep mask per forward pass, drawn by the
// model's first layer and reused by the others, at the model's dropout rate.
class DistanceDropout final : public Module {
 public:
  DistanceDropout(double p, Generator& parent);

  // sinusoids: [Lk, model_dim] -> the same times this pass's keep mask / (1 - p); `new_pass`
  // (the first layer) draws the mask. The identity in eval mode.
  Tensor apply(const Tensor& sinusoids, bool new_pass);

 private:
  double p_;
  Generator gen_;
  Tensor mask_;  // u8 [Lk, model_dim]: this pass's
};

class RelXlAttention final : public Attention {
 public:
  // Options: dropout (on the attention weights; default opt.dropout, the model's
  // attention_dropout), clamp_len (distances above it use its embedding; 0 = no clamp), fused
  // (true: the fused attention op with the position term inside its tiles, memory linear in L;
  // false, or with a positional score bias: the composed form).
  // Needs opt.model_dim (even): the width of the sinusoids.
  explicit RelXlAttention(const AttentionOptions& opt);

  Var forward(const Var& q, const Var& k, const Var& v, const AttentionInputs& in) override;
  AttentionCaps caps() const override {
    return {.forms_scores = true,
            .kernelized = false,
            .causal_only = true,
            .own_positions = true,
            .uses_positions = true,
            .fused = fused_};
  }
  std::string name() const override { return "rel_xl"; }

  // Distances above `clamp_len` use its embedding from now on (0: no clamp); evaluation may
  // change it (Transformer-XL evaluates with clamp_len 820 after training with none).
  void set_clamp_len(int64_t clamp_len);
  int64_t clamp_len() const { return clamp_len_; }
  // How many times the sinusoid table was computed (it is kept while Lk, dtype, device and
  // clamp_len stay the same).
  int64_t sinusoid_tables_built() const { return sinusoid_tables_built_; }

  // The distance embedding is dropped by `dropout` (shared with the model's other layers);
  // `first_layer` draws each pass's mask.
  void share_distance_dropout(std::shared_ptr<DistanceDropout> dropout, bool first_layer);

  Var& r_w_bias() { return r_w_bias_; }  // u: [H, D]
  Var& r_r_bias() { return r_r_bias_; }  // v: [H, D]
  Linear& r_net() { return *r_net_; }    // model_dim -> H * D, no bias

 private:
  // Sinusoids of the distances Lk - 1, ..., 0 (clamped): [Lk, model_dim], kept for the next call.
  const Tensor& relative_sinusoids(int64_t k_len, DType dtype, Device device);

  // r_net of the sinusoids, heads split: [H, Lk, D], row c embedding distance Lk - 1 - c, or
  // distance c when `by_distance`.
  Var relative_embeddings(int64_t k_len, DType dtype, Device device, bool by_distance);

  int64_t heads_, head_dim_, model_dim_, clamp_len_;
  int64_t sinusoid_tables_built_ = 0;
  double dropout_;
  bool fused_;
  Generator gen_;
  Var r_w_bias_, r_r_bias_;
  std::shared_ptr<Linear> r_net_;
  std::shared_ptr<DistanceDropout> distance_dropout_;  // none: the embedding is not dropped
  bool draws_distance_mask_ = false;
  Tensor sinusoids_;  // cache of relative_sinusoids
};

}  // namespace relpos
