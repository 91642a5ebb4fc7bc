// Toeplitz products by zero-padded FFT (seed 002 App. B.2, Prop. 3.1) and the learned weights
// both FastRPB encodings share (fastrpb.cpp, fastrpb2d.cpp): W[i, j] = w_(i-j) is embedded in a
// circulant of size m >= 2n - 1, so W·x is the first n rows of circ(c)·[x; 0], one rfft/irfft
// pair: O(D n log n) time, O(D n) memory, never the [n, n] matrix.
#pragma once

#include <cstdint>

#include "autograd/functions.h"
#include "layers/attention/attention.h"

namespace relpos {

// The circulant size for a product of length n: the smallest 2^a 3^b 5^c >= 2n - 1 (fast sizes
// for both FFTW and cuFFT; at most 16% above 2n - 1, where a power of two may double it).
int64_t toeplitz_fft_size(int64_t n);

// weights: [H, 2n - 1], column k the weight of distance i - j = k - (n - 1); x: [B, H, n, D]
// -> y [B, H, n, D], y[i] = sum_j w_(i-j) x[j] over every j, or only j <= i when causal.
Var toeplitz_matvec(const Var& weights, const Var& x, bool causal);

// What both FastRPB encodings read from their mapping besides their sizes.
struct ToeplitzBiasOptions {
  bool symmetric = false;  // parameterization: full (w_d per signed d) or symmetric (w_|d|)
  int64_t front = 0;       // special_tokens_front: leading tokens (CLS/BOS) with no bias rows
  int64_t back = 0;        // special_tokens_back: trailing tokens (SEP/EOS) with no bias rows
};
// special_tokens_front / _back default to the model's opt.special_front / special_back.
ToeplitzBiasOptions read_toeplitz_bias_options(const AttentionOptions& opt, const char* component);

// The stored weights of distances up to n - 1 in magnitude: [H, 2n - 1] (full; column
// k <-> d = k - (n - 1)) or [H, n] (symmetric; column k <-> |d| = k), each row initialized as the
// FastRPB reference does: w_d = |d| * 1e-5 * u_h + 1e-6 * z_h, with u_h ~ U[0, 1) and
// z_h ~ N(0, 1) one scalar each per head (a tiny ramp in |d| plus a per-head offset).
Tensor init_toeplitz_weights(bool symmetric, int64_t heads, int64_t n, DType dtype, Generator& gen);

// The full-form weights [H, 2n - 1] of distances -(n-1)..n-1 from stored ones (above) of any
// larger n: the central slice (full) or w_|d| mirrored (symmetric).
Var central_toeplitz_weights(const Var& weights, bool symmetric, int64_t n);

// v: [B, H, L, D] -> the content rows [B, H, L - front - back, D] with padding keys
// (in.key_mask) zeroed; errors (naming `component`) when no content token is left.
Var toeplitz_content_values(const Var& v, const AttentionInputs& in,
                            const ToeplitzBiasOptions& options, const char* component);

}  // namespace relpos
