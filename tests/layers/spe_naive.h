// Naive twins of stochastic positional encoding (tests/layers/test_spe.cpp), by explicit loops in
// f64 from the definitions of Liutkus et al. 2021: the sinSPE and convSPE codes from their
// parameters and noise, the gated filter, the kernels the codes' cross-covariance should approach,
// and how far an empirical cross-covariance is from stationary.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "layers/attention/spe_filter.h"

namespace relpos::test {

// The parameter `name` of `m` (undefined when it has none).
Var parameter(const Module& m, const std::string& name);

struct NaiveCodes {
  Tensor qbar, kbar;  // [H, L, D, R], f64
};

// Q̄[h,l,d,r] = s Σ_k γ (cos(ω l + φ) z_cos + sin(ω l + φ) z_sin), K̄ without φ; ω = π σ(freqs),
// γ = softplus(gains), s = spe_scale. freqs, offsets, gains [H, D, K]; noise [H, D, 2K, R].
NaiveCodes naive_sine_codes(const Tensor& freqs, const Tensor& offsets, const Tensor& gains,
                            const Tensor& noise, int64_t len);

// Q̄[h,(i,j),d,r] = s Σ_(a,b) w_q[hd, a, b] z[h,d,r, (i + a)(cols + kw − 1) + j + b] on a rows x
// cols grid. weights [H·D, 1, kw] or [H·D, 1, kh, kw]; noise [H, D, R, (rows + kh − 1)(cols + kw −
// 1)].
NaiveCodes naive_conv_codes(const Tensor& weight_q, const Tensor& weight_k, const Tensor& noise,
                            int64_t rows, int64_t cols);

// The codes `spe` (sinspe or convspe) computes, by the loops above from its parameters.
NaiveCodes naive_codes(const StochasticPositional& spe, const Tensor& noise, int64_t rows,
                       int64_t cols);

// q̂, k̂ of an eval forward of `spe`: the draw of Generator(eval_seed), codes by the loops above
// (a grid with `rows` rows; 1-D: 1) for keys at positions 0 .. Lk - 1 and queries at
// query_offset .. query_offset + Lq - 1, and the filter below.
std::pair<Tensor, Tensor> naive_spe_transform(const StochasticPositional& spe, const Tensor& q,
                                              const Tensor& k, int64_t rows,
                                              int64_t query_offset = 0);

// q̂[b,h,l,r] = Σ_d q (sqrt(1 − σ(g)) Q̄ + sqrt(σ(g)) n), k̂ alike; gate undefined: Σ_d q Q̄.
// q [B, H, Lq, D], k [B, H, Lk, D], codes [H, Lq or Lk, D, R], gate [H, D], noise [H, D, R].
std::pair<Tensor, Tensor> naive_spe_filter(const Tensor& q, const Tensor& k, const Tensor& qbar,
                                           const Tensor& kbar, const Tensor& gate,
                                           const Tensor& gate_noise);

// E[Σ_r Q̄[h,m,d,r] K̄[h,n,d,r]] for a grid offset m − n = (dr, dc) (1-D: dr = 0).
using SpeKernel = std::function<double(int64_t h, int64_t d, int64_t dr, int64_t dc)>;
SpeKernel sine_kernel(const Tensor& freqs, const Tensor& offsets, const Tensor& gains,
                      int64_t realizations);
SpeKernel conv_kernel(const Tensor& weight_q, const Tensor& weight_k, int64_t head_dim,
                      int64_t realizations);

// For C_hd[m, n] = Σ_r Q̄[h,m,d,r] K̄[h,n,d,r] on a grid `cols` wide (positions row-major; 1-D:
// cols = L):
// `spread` is the largest distance of an entry from the mean of the entries with the same offset
// m − n (0 when C is stationary), `kernel_error` the largest |C − kernel(m − n)|; both in units of
// sqrt(mean_m |Q̄_m|² mean_n |K̄_n|²) of that (h, d), i.e. as correlations.
struct Stationarity {
  double spread = 0, kernel_error = 0;
};
Stationarity stationarity(const Tensor& qbar, const Tensor& kbar, int64_t cols,
                          const SpeKernel& kernel);

}  // namespace relpos::test
