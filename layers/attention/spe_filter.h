// Stochastic positional encoding, SPE (Liutkus et al. 2021, "Relative Positional Encoding for
// Transformers with Linear Complexity", §3): what sinspe and convspe share. Each forward draws
// Gaussian codes Q̄, K̄ [H, L, D, R] whose cross-covariance E[Q̄_m · K̄_n] is a relative kernel
// P_d(m − n), then rewrites q, k into R features: q̂_m = Σ_d q_md Q̄_md, so
// E[q̂_m · k̂_n] = Σ_d q_md k_nd P_d(m − n) and any attention (softmax or linear) runs on q̂, k̂.
#pragma once

#include <utility>

#include "layers/attention/positional.h"

namespace relpos {

// (R·D)^(-1/4), the scale of Q̄, K̄ and the gate noise: it makes E[q̂·k̂] / sqrt(R) =
// Σ_d q_d k_d P_d / sqrt(D), so a host dividing scores by sqrt(R) (its head dim) keeps the usual
// 1/sqrt(D) of softmax attention.
double spe_scale(int64_t realizations, int64_t head_dim);

// One draw of the codes, each [H, L, D, R], already scaled by spe_scale.
struct SpeCodes {
  Var qbar, kbar;
};

// The gated SPE filter (the reference SPEFilter), with gate g [H, D] and gate noise n [H, D, R]
// (N(0, 1) · spe_scale, the same for every position, for queries and keys):
//   q̂[b,h,l,r] = Σ_d q[b,h,l,d] (sqrt(1 − σ(g_hd)) Q̄[h,l,d,r] + sqrt(σ(g_hd)) n[h,d,r]),
// and k̂ alike with K̄. σ(g) is the share of the position-free part (the PyTorch reference's
// convention; its JAX twin swaps the two weights). gate undefined: q̂ = Σ_d q Q̄.
// q: [B, H, Lq, D], k: [B, H, Lk, D], codes for Lq and Lk positions -> [B, H, Lq, R], [B, H, Lk,
// R].
std::pair<Var, Var> spe_filter(const Var& q, const Var& k, const SpeCodes& codes, const Var& gate,
                               const Tensor& gate_noise);

// sinSPE codes (sinspe.cpp, paper §3, "sineSPE"): with ω = π σ(freqs) (frequencies σ/2 in cycles
// per step), softplus gains γ and z = noise [H, D, 2K, R] (cos rows, then sin rows),
//   Q̄[h,l,d,r] = Σ_k γ_hdk (cos(ω_hdk l + φ_hdk) z[h,d,k,r] + sin(ω_hdk l + φ_hdk) z[h,d,K+k,r]),
//   K̄ alike without the offsets φ; positions l = 0 .. len − 1.
// freqs, offsets, gains: [H, D, K] -> codes for len positions.
SpeCodes sine_spe_codes(const Var& freqs, const Var& offsets, const Var& gains, const Tensor& noise,
                        int64_t len);

// convSPE codes (convspe.cpp, paper §3, "convSPE"): depthwise correlations of white noise with
// learned filters, Q̄[h,(i,j),d,r] = Σ_(s,t) w_q[hd, s, t] z[h,d,r, i+s, j+t] on a rows x cols grid
// (1-D: rows = 1). weight_q, weight_k: [H·D, 1, k] (1-D) or [H·D, 1, kh, kw] (2-D), torch's
// depthwise Conv1d/Conv2d layout; noise: [H, D, R, (rows + kh − 1) (cols + kw − 1)] (row-major
// grid).
SpeCodes conv_spe_codes(const Var& weight_q, const Var& weight_k, const Tensor& noise, int64_t rows,
                        int64_t cols);

// The Positional both encodings derive from. Options read here: num_realizations (R, default 64),
// gated (default true), eval_seed (default 0). Noise comes from a Philox generator forked from
// opt.generator(): a fresh draw every training forward, and in eval the same draw every time
// (re-seeded from eval_seed: layers left at the default share it), on the device of q, so CPU
// and CUDA see the same numbers.
class StochasticPositional : public Positional {
 public:
  StochasticPositional(const AttentionOptions& opt, const char* component);

  int64_t qk_dim(int64_t head_dim) const override { return realizations_; }
  // Codes for the positions of AttentionInputs: key j at j, query i at query_offset + i (after
  // a memory when causal, from 0 otherwise), drawn for the span they cover.
  std::pair<Var, Var> transform_qk(const Var& q, const Var& k, const AttentionInputs& in) override;

  // What one forward draws from `gen`, in this order: (gated only) the gate noise [H, D, R], then
  // the code noise for `len` positions. Both are prefix-stable: the samples the codes of
  // positions 0 .. n - 1 read are the same for every len >= n, so in eval a sequence's codes do
  // not depend on the length its batch is padded to (a prediction depends on the example only).
  virtual Tensor draw_noise(int64_t len, Generator& gen, DType dtype, Device device) const = 0;
  Tensor draw_gate_noise(Generator& gen, DType dtype, Device device) const;
  // Q̄, K̄ for `len` positions from the code noise.
  virtual SpeCodes codes(const Tensor& noise, int64_t len) const = 0;

  const Var& gate() const { return gate_; }  // [H, D]; undefined when not gated
  uint64_t eval_seed() const { return eval_seed_; }

 protected:
  // Refuses lengths the encoding cannot place (a grid has a fixed number of pixels).
  virtual void check_lengths(int64_t q_len, int64_t k_len) const {}

  const char* component_;
  int64_t heads_, head_dim_, realizations_;

 private:
  uint64_t eval_seed_;
  Generator train_gen_;
  Var gate_;
};

}  // namespace relpos
