// The op catalog: every tensor op, declared once, grouped by kind. Entry points (core/ops/*.cpp)
// validate shapes, dtypes and devices, allocate the output and dispatch on the device to the
// kernels of core/cpu/ or core/cuda/ (core/backend.h). No op moves data between devices; mixing
// devices is an error naming the op and both devices. Inputs may be any strided view.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"

namespace relpos {

// ---------------------------------------------------------------- creation (ops/creation.cpp)
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
            Device device = Device::cpu());
Tensor zeros_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);
// [start, start + step, ...) below `end` (above it for step < 0): 1-D, like numpy.arange.
Tensor arange(double start, double end, double step = 1, DType dtype = DType::i64,
              Device device = Device::cpu());
// Uniform in [low, high) and normal(mean, std) from the Philox stream of `gen`; the values for
// a given generator state are identical on every device.
Tensor rand(const Shape& shape, Generator& gen, double low = 0, double high = 1,
            DType dtype = DType::f32, Device device = Device::cpu());
Tensor randn(const Shape& shape, Generator& gen, double mean = 0, double std = 1,
             DType dtype = DType::f32, Device device = Device::cpu());

// ---------------------------------------------------------------- copy, cast (ops/copy.cpp)
// dst[...] = src[...] with src broadcast to dst's shape and converted to dst's dtype. dst may be
// a view (this is slice-assign: copy_(x.slice(1, 2, 5), y)).
void copy_(const Tensor& dst, const Tensor& src);
void fill_(const Tensor& dst, double value);
Tensor cast(const Tensor& x, DType dtype);  // x itself when the dtype already matches
Tensor to_device(const Tensor& x, Device device);

// ---------------------------------------------------------------- elementwise (ops/unary.cpp)
// Floating dtypes only, except neg/abs/add_scalar/mul_scalar which also accept integers.
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor sin(const Tensor& x);  // radians
Tensor cos(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor gelu(const Tensor& x);  // exact: x * Phi(x), Phi the normal CDF (erf form)
Tensor abs(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);
Tensor add_scalar(const Tensor& x, double s);
Tensor mul_scalar(const Tensor& x, double s);

// ---------------------------------------------------------------- binary (ops/binary.cpp)
// NumPy broadcasting; both operands of one dtype and device.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Gradients of the pointwise functions, fused: grad * f'(x) (x the input) or, for tanh and
// sigmoid, grad * f'(y) from the output y. Used by autograd/functions.
Tensor relu_backward(const Tensor& x, const Tensor& grad);
Tensor elu_backward(const Tensor& x, const Tensor& grad, double alpha);
Tensor gelu_backward(const Tensor& x, const Tensor& grad);
Tensor tanh_backward(const Tensor& y, const Tensor& grad);
Tensor sigmoid_backward(const Tensor& y, const Tensor& grad);

// ---------------------------------------------------------------- comparisons (ops/compare.cpp)
// Broadcasting comparisons returning u8 masks (1 where true).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// cond (u8) ? a : b, all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x with `value` where mask (u8, broadcast to x) is non-zero.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---------------------------------------------------------------- reductions (ops/reduce.cpp)
// Over `dims` (negative allowed; empty = all dims). keepdim keeps reduced dims as size 1.
// f32 sums accumulate in f64 on the CPU.
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Index (i64) of the first maximum along one dim.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
// The sum of squares of every element of every tensor (floating, one device), as a 0-d f64 tensor
// on that device: squares and sums in f64, in a fixed order (the same bits on every run). One pass
// over all tensors, with no temporaries: the global gradient norm is sqrt of this.
Tensor sum_of_squares(const std::vector<Tensor>& xs);

// ---------------------------------------------------------------- normalization (ops/softmax.cpp,
// ops/layer_norm.cpp): fused and numerically stable (max subtracted before exp).
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// From the forward output y and its gradient gy: gx = y * (gy - sum(gy * y)) for softmax,
// gx = gy - exp(y) * sum(gy) for log_softmax.
Tensor softmax_backward(const Tensor& y, const Tensor& gy, int64_t dim);
Tensor log_softmax_backward(const Tensor& y, const Tensor& gy, int64_t dim);

struct LayerNormResult {
  Tensor y;     // [..., D]
  Tensor mean;  // [...] (f32/f64 like x), saved for backward
  Tensor rstd;  // [...] 1 / sqrt(var + eps), biased variance
};
// Over the last dim; weight and bias are [D] or undefined (then 1 and 0).
LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
struct LayerNormGrads {
  Tensor dx, dweight, dbias;  // dweight/dbias undefined when weight/bias were
};
LayerNormGrads layer_norm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, bool has_bias);

// ---------------------------------------------------------------- linear algebra (ops/matmul.cpp)
// a: [..., M, K] (or [..., K, M] when trans_a), b: [..., K, N] (or [..., N, K] when trans_b)
// -> [..., M, N]; batch dims broadcast. 1-D operands are not accepted (use unsqueeze).
// Transposed views are passed to BLAS without copies.
// bf16 operands are multiplied with f32 accumulation (cuBLAS compute 32F; on the CPU converted to
// f32, which is exact, for the f32 GEMM) and rounded to bf16 at the end, or returned unrounded
// when out_dtype is f32. Otherwise out_dtype is the operands' dtype.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, DType out_dtype);
// Strictly batched: a [B, M, K], b [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, DType out_dtype);

// ---------------------------------------------------------------- attention (ops/attention.cpp)
// Scaled dot-product attention computed by tiles with an online softmax (FlashAttention-2, Dao
// 2023): Y = dropout(softmax(scale Q·Kᵀ, blocked pairs excluded)) V without an [Lq, Lk] tensor.
// The forward keeps Y and each row's log-sum-exp; the backward recomputes the tiles from them.
// Blocked pairs weigh exactly 0; a query that sees no key outputs zeros (log-sum-exp -inf).
struct AttentionSpec {
  double scale = 1;
  Tensor key_mask;      // [B, Lk] u8, nonzero = a real key; undefined: every key is real
  bool causal = false;  // query i sees key j only when j <= i + (Lk - Lq) (ends aligned)
  int64_t window = 0;   // causal: and only when j > i + (Lk - Lq) - window (0: no window)
  double dropout = 0;   // probability of dropping a weight after the softmax
  uint64_t seed = 0;    // dropout: weight (b, h, i, j) is kept when Philox uniform number
  uint64_t offset = 0;  //   ((b H + h) Lq + i) Lk + j of (seed, offset) is >= dropout,
                        //   the mask dropout_mask({B, H, Lq, Lk}, ...) draws from the same stream
  // A relative position term (Transformer-XL's (b) + (d), Dai et al. 2019 §3.3; the score bias
  // of Shaw et al. 2018 and of skew): when defined, the logit of pair (i, j) becomes
  // scale (q_i·k_j + rel_query_i·rel_key[row]) with row = clamp(δ, rel_min, rel_max) - rel_min
  // and δ = i + rel_offset - j, the query's position minus the key's.
  Tensor rel_query;  // [B, H, Lq, R] (TXL: q + v)
  Tensor rel_key;    // [H or 1, rel_max - rel_min + 1, R]: one table per head, or one for all
  int64_t rel_offset = 0, rel_min = 0, rel_max = 0;
};
struct AttentionResult {
  Tensor out;  // [B, H, Lq, Dv]
  Tensor lse;  // [B, H, Lq], log sum_j exp(scale q_i·k_j) over visible j (-inf: none visible)
};
// q: [B, H, Lq, D], k: [B, H, Lk, D], v: [B, H, Lk, Dv] (and the position term's tensors), one
// dtype (f32, f64 or bf16) and device. bf16 operands are computed on in f32 and their results
// (out and the gradients) rounded to bf16 once; lse is f32 for them.
AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v,
                          const AttentionSpec& spec);
struct AttentionGrads {
  Tensor dq, dk, dv;
  Tensor drel_query, drel_key;  // defined when the spec has the position term
};
// From the forward's inputs, output and log-sum-exp and the output's gradient.
AttentionGrads attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const AttentionResult& forward,
                                  const AttentionSpec& spec);

// ---------------------------------------------------------------- FFT (ops/fft.cpp)
// Complex values are real tensors with a trailing dim of 2: (re, im).
// x: [..., L] real -> [..., n/2 + 1, 2]; x is zero-padded or truncated to n (n = -1: n = L).
// Unnormalized forward transform: X_k = sum_j x_j e^{-2 pi i jk/n}.
Tensor rfft(const Tensor& x, int64_t n = -1);
// X: [..., M, 2] -> [..., n] real, the inverse of rfft(·, n) including the 1/n factor; only the
// first n/2 + 1 bins are read (missing ones are zero). n = -1: n = 2 (M - 1).
Tensor irfft(const Tensor& X, int64_t n = -1);
// The complex product of spectra, a * b (or a * conj(b)): a, b [..., 2] broadcast to each other
// -> [..., 2]. One pass, where four real products on (re, im) views would take seven.
Tensor complex_mul(const Tensor& a, const Tensor& b, bool conj_b = false);

// ---------------------------------------------------------------- scans (ops/cumsum.cpp)
// Inclusive prefix sum along dim; reverse = suffix sum (out_i = sum_{j >= i} x_j).
Tensor cumsum(const Tensor& x, int64_t dim, bool reverse = false);

// ---------------------------------------------------------------- indexing (ops/index.cpp)
// index: 1-D i32/i64, every entry in [0, x.size(dim)); out.size(dim) = index.numel().
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// weight: [V, D], ids: any shape of i32/i64 in [0, V) -> [*ids.shape, D].
Tensor embedding(const Tensor& weight, const Tensor& ids);
// out[i][j][k] = x[i][index[i][j][k]][k] (dim = 1); index has x's rank and the output's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// A copy of x with out[i][index[i][j][k]][k] += src[i][j][k] (dim = 1); index shaped like src.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// A copy of x with out.select(dim, index[i]) += src.select(dim, i); index 1-D.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// ---------------------------------------------------------------- joining (ops/join.cpp)
Tensor cat(const std::vector<Tensor>& xs, int64_t dim);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim);
// pads = {before_last, after_last, before_second_last, after_second_last, ...} (as torch's
// F.pad), non-negative, filled with `value`.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value = 0);
// A copy of x with x.slice(dim, start, end) replaced by src (broadcast to the slice).
Tensor slice_assign(const Tensor& x, int64_t dim, int64_t start, int64_t end, const Tensor& src);

// ---------------------------------------------------------------- dropout (ops/dropout.cpp)
// Keep mask (u8) where each element is kept with probability 1 - p; element i of the mask
// depends only on (seed, offset, i), so masks match across devices.
Tensor dropout_mask(const Shape& shape, double p, Generator& gen, Device device = Device::cpu());
// x * mask / (1 - p).
Tensor apply_dropout_mask(const Tensor& x, const Tensor& mask, double p);
// The same, written over x (contiguous, and no other tensor's view): for a temporary the caller
// owns, so no second buffer of x's size is allocated.
void apply_dropout_mask_(const Tensor& x, const Tensor& mask, double p);

// ---------------------------------------------------------------- losses (ops/cross_entropy.cpp)
enum class Reduction { none, mean, sum };
// logits: [N, C] floating, target: [N] i32/i64 in [0, C) or == ignore_index. Fused with
// log_softmax. mean divides by the number of non-ignored targets (0 -> result 0).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::mean);
// d loss / d logits for the same arguments; grad is the loss gradient ([N] for none, [] else).
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& grad,
                              int64_t ignore_index, Reduction reduction);

// ---------------------------------------------------------------- optimizer steps (ops/adam.cpp)
// One Adam(W) update of a parameter (train/adam.h) in one pass, as torch.optim.Adam(W) computes
// it: param, grad, exp_avg and exp_avg_sq of one shape, one floating dtype (f32 or f64) and one
// device; new tensors are returned, the inputs are left as they were. In the dtype, one rounding
// per operation, in this order (each scalar factor rounded once; with weight_decay 0 neither
// decay applies):
//   g1 = decoupled ? g : g + p·wd;      p1 = decoupled ? p·(1 − lr·wd) : p
//   m' = m·β1 + g1·(1 − β1);            v' = v·β2 + (g1·g1)·(1 − β2)
//   p' = p1 − (m' / (√v'·(1/√(1 − β2^t)) + ε))·(lr / (1 − β1^t))
// the bits of the same formula computed op by op (tests/core/test_adam_update.cpp).
struct AdamCoefficients {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW's p·(1 − lr·wd), else Adam's g + p·wd
  double step = 1;         // t: this update's count, 1 for the first
};
struct AdamUpdate {
  Tensor param, exp_avg, exp_avg_sq;
};
AdamUpdate adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                       const Tensor& exp_avg_sq, const AdamCoefficients& c);

// ---------------------------------------------------------------- checks (ops/checks.cpp)
// Whether every element of a floating tensor is finite (false on NaN or +-Inf).
bool all_finite(const Tensor& x);
// True when a and b have the same shape and |a - b| <= atol + rtol * |b| everywhere.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace relpos
