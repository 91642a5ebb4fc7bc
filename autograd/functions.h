// Differentiable functions over Var: each lives in autograd/functions/<group>.cpp with its
// forward (core ops) and its backward (a closure over the saved tensors). Non-differentiable
// arguments (indices, masks, targets) are plain Tensors.
#pragma once

#include <vector>

#include "autograd/var.h"
#include "core/generator.h"
#include "core/ops.h"

namespace relpos {

// ---------------------------------------------------------------- pointwise (functions/unary.cpp)
Var neg(const Var& x);
Var exp(const Var& x);
Var log(const Var& x);
Var sqrt(const Var& x);
Var rsqrt(const Var& x);
Var tanh(const Var& x);
Var sigmoid(const Var& x);
Var sin(const Var& x);
Var cos(const Var& x);
Var relu(const Var& x);
Var elu(const Var& x, double alpha = 1.0);
Var gelu(const Var& x);
Var abs(const Var& x);  // d|x|/dx = sign(x), 0 at 0
Var pow(const Var& x, double exponent);
Var add_scalar(const Var& x, double s);
Var mul_scalar(const Var& x, double s);

// ---------------------------------------------------------------- binary (functions/binary.cpp)
// Broadcasting; gradients are reduced back to each input's shape (sum_to).
Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
// Where a == b the gradient is split equally between a and b (as torch does).
Var maximum(const Var& a, const Var& b);
Var minimum(const Var& a, const Var& b);
Var where(const Tensor& cond, const Var& a, const Var& b);
Var masked_fill(const Var& x, const Tensor& mask, double value);

inline Var operator+(const Var& a, const Var& b) {
  return add(a, b);
}
inline Var operator-(const Var& a, const Var& b) {
  return sub(a, b);
}
inline Var operator*(const Var& a, const Var& b) {
  return mul(a, b);
}
inline Var operator/(const Var& a, const Var& b) {
  return div(a, b);
}
inline Var operator-(const Var& x) {
  return neg(x);
}
inline Var operator+(const Var& x, double s) {
  return add_scalar(x, s);
}
inline Var operator-(const Var& x, double s) {
  return add_scalar(x, -s);
}
inline Var operator*(const Var& x, double s) {
  return mul_scalar(x, s);
}
inline Var operator/(const Var& x, double s) {
  return mul_scalar(x, 1.0 / s);
}
inline Var operator*(double s, const Var& x) {
  return mul_scalar(x, s);
}

// ---------------------------------------------------------------- reductions
// (functions/reduce.cpp)
Var sum(const Var& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Var mean(const Var& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// The gradient goes to every position equal to the maximum, divided among ties (as torch's
// amax).
Var max(const Var& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Var logsumexp(const Var& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Var cumsum(const Var& x, int64_t dim, bool reverse = false);

// ---------------------------------------------------------------- normalization
// (functions/norm.cpp)
Var softmax(const Var& x, int64_t dim);
Var log_softmax(const Var& x, int64_t dim);
// weight/bias may be undefined Vars (no affine part).
Var layer_norm(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5);
// Identity in eval (training = false) or p = 0; otherwise x * mask / (1 - p).
Var dropout(const Var& x, double p, Generator& gen, bool training = true);
Var cross_entropy(const Var& logits, const Tensor& target, int64_t ignore_index = -100,
                  Reduction reduction = Reduction::mean);

// ---------------------------------------------------------------- attention
// (functions/attention.cpp)
// Tiled scaled dot-product attention (core/ops.h attention): q [B, H, Lq, D], k [B, H, Lk, D],
// v [B, H, Lk, Dv] -> [B, H, Lq, Dv]; saves only the output and the row log-sum-exp. When
// training with spec.dropout > 0, the mask's (seed, offset) come from `gen`, which reserves the
// blocks dropout_mask({B, H, Lq, Lk}) would, so the same generator state drops the same weights
// as softmax, dropout and matmul composed. Not training: no dropout.
Var attention(const Var& q, const Var& k, const Var& v, AttentionSpec spec, Generator& gen,
              bool training);
// With Transformer-XL's position term (core/ops.h AttentionSpec): rel_query [B, H, Lq, R]
// (q + v) and rel_key [H, Lk, R] (row δ embeds distance δ) become the spec's, and get gradients.
Var attention(const Var& q, const Var& k, const Var& v, const Var& rel_query, const Var& rel_key,
              AttentionSpec spec, Generator& gen, bool training);

// ---------------------------------------------------------------- the transformer MLP
// (functions/feed_forward.cpp)
enum class Activation { gelu, relu };
Var activate(Activation act, const Var& x);
// The second half of a transformer MLP from fc1's output h [N, hidden]: linear(dropout(act(h)),
// weight [out, hidden], bias [out] or undefined) -> [N, out]. Saves only h and the generator
// state the mask was drawn at: the backward computes act(h) and draws the mask again, so the
// [N, hidden] activation and its mask are not kept between the passes (selective recomputation,
// Korthikanti et al. 2022). The same bits as activate, dropout and matmul composed, gradients
// included; `gen` advances as dropout's would. Not training, or p = 0: no dropout. Under bf16
// autocast h is rounded to bf16 and kept so (the composition on h's rounded values).
Var activation_dropout_linear(const Var& h, Activation act, double p, Generator& gen, bool training,
                              const Var& weight, const Var& bias);

// ---------------------------------------------------------------- linear algebra, FFT
Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
Var bmm(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
Var rfft(const Var& x, int64_t n = -1);
Var irfft(const Var& X, int64_t n = -1);
// a * b, or a * conj(b), of complex [..., 2] tensors with broadcasting (core complex_mul).
Var complex_mul(const Var& a, const Var& b, bool conj_b = false);

// ---------------------------------------------------------------- indexing, joining
// (functions/index.cpp, join.cpp)
Var index_select(const Var& x, int64_t dim, const Tensor& index);
Var embedding(const Var& weight, const Tensor& ids);
Var gather(const Var& x, int64_t dim, const Tensor& index);
Var scatter_add(const Var& x, int64_t dim, const Tensor& index, const Var& src);
Var index_add(const Var& x, int64_t dim, const Tensor& index, const Var& src);
Var cat(const std::vector<Var>& xs, int64_t dim);
Var stack(const std::vector<Var>& xs, int64_t dim);
Var pad(const Var& x, const std::vector<int64_t>& pads, double value = 0);
Var slice_assign(const Var& x, int64_t dim, int64_t start, int64_t end, const Var& src);

// ---------------------------------------------------------------- views, casts
// (functions/view.cpp)
Var reshape(const Var& x, const Shape& shape);
Var transpose(const Var& x, int64_t d0, int64_t d1);
Var permute(const Var& x, const std::vector<int64_t>& dims);
Var slice(const Var& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Var select(const Var& x, int64_t dim, int64_t index);
Var expand(const Var& x, const Shape& shape);
Var unsqueeze(const Var& x, int64_t dim);
Var squeeze(const Var& x, int64_t dim);
Var flatten(const Var& x, int64_t start = 0, int64_t end = -1);
Var diagonal(const Var& x, int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1);
Var contiguous(const Var& x);
Var cast(const Var& x, DType dtype);  // between floating dtypes

}  // namespace relpos
