// shaw: relative position embeddings clipped at a window k, shared across heads (Shaw et al.
// 2018, eqs. 4-5): S[i, j] = q_i · w_clip(j - p_i, -k, k), the distance from query i's position
// p_i = i + AttentionInputs::query_offset (after a memory when causal) to key j. score_bias
// gathers S from Q·Wᵀ. kernel_terms gives S_rel·V and S_rel·1 for kernelized attention (seed 003
// §IV; the seed writes RP_clip(i - j), here both hooks use row clip(j - p_i) + k, so W means the
// same in either host) densely (naive) or at linear memory (§III): prefix and suffix sums of V
// for the clipped horizons |j - p_i| >= k, plus a band of 2k - 1 shifted copies of V weighted by
// the window's rows.
#include "layers/attention/shaw.h"

#include <algorithm>

#include "autograd/functions.h"
#include "layers/attention/masks.h"
#include "layers/init.h"

namespace relpos {
namespace {

constexpr const char* kWhere = "positional shaw";

ShawPositional::Algorithm parse_algorithm(const std::string& name) {
  if (name == "auto") return ShawPositional::Algorithm::automatic;
  if (name == "naive") return ShawPositional::Algorithm::naive;
  RELPOS_CHECK(name == "linear", kWhere, "unknown algorithm '{}'; known: auto, linear, naive",
               name);
  return ShawPositional::Algorithm::linear;
}

// i64 x clamped into [min, max].
Tensor clamp_i64(const Tensor& x, int64_t min, int64_t max) {
  const Device device = x.device();
  return minimum(maximum(x, full({1}, static_cast<double>(min), DType::i64, device)),
                 full({1}, static_cast<double>(max), DType::i64, device));
}

// i64 [n]: from, from + 1, ..., from + n - 1.
Tensor range_i64(int64_t from, int64_t n, Device device) {
  return arange(static_cast<double>(from), static_cast<double>(from + n), 1, DType::i64, device);
}

// w: [B, H, Lq, 2k + 1] (each query · each embedding) -> S [B, H, Lq, Lk] with
// S[i, j] = w[i, clip(j - (i + offset), -k, k) + k]: query i at position i + offset.
Var relative_scores(const Var& w, int64_t k_len, int64_t k, int64_t offset) {
  const int64_t b = w.size(0), h = w.size(1), q_len = w.size(2);
  const Device device = w.value().device();
  const Tensor distance = sub(range_i64(0, k_len, device).reshape({1, k_len}),
                              range_i64(offset, q_len, device).reshape({q_len, 1}));  // [Lq, Lk]
  const Tensor rows = add_scalar(clamp_i64(distance, -k, k), static_cast<double>(k));
  return gather(w, 3, rows.reshape({1, 1, q_len, k_len}).expand({b, h, q_len, k_len}));
}

// v: [B, H, Lk, Dv] -> [B, H, Lk, Dv + 1]: V beside a column of ones, padding keys' rows zeroed,
// so one product gives S_rel·V and S_rel·1 ("V replaced by ones", seed 003 §IV).
Var values_and_ones(const Var& v, const AttentionInputs& in) {
  const int64_t b = v.size(0), h = v.size(1), k_len = v.size(2);
  if (!in.key_mask.defined())
    return cat({v, Var(ones({b, h, k_len, 1}, v.dtype(), v.value().device()))}, 3);
  const Var keep(key_keep_column(in.key_mask, v.dtype()));  // [B, 1, Lk, 1]
  return cat({v * keep, expand(keep, {b, h, k_len, 1})}, 3);
}

// Dense S_rel [B, H, Lq, Lk] times V (memory Lq·Lk per head), query i at position i + offset.
// w: [B, H, Lq, 2k + 1], values: [B, H, Lk, C] -> [B, H, Lq, C]
Var naive_product(const Var& w, const Var& values, int64_t k, bool causal, int64_t offset) {
  const int64_t q_len = w.size(2), k_len = values.size(2);
  Var s = relative_scores(w, k_len, k, offset);  // [B, H, Lq, Lk]
  if (causal) s = masked_fill(s, causal_blocked(q_len, k_len, w.value().device()), 0.0);
  return matmul(s, values);
}

// Rows first .. first + count - 1 of x [B, H, L, C] along dim 2, zeros where outside [0, L).
Var rows_or_zeros(const Var& x, int64_t first, int64_t count) {
  const int64_t len = x.size(2);
  const int64_t lo = std::clamp<int64_t>(first, 0, len), hi = std::clamp(first + count, lo, len);
  const int64_t before = std::min(count, std::max<int64_t>(0, -first));
  return pad(slice(x, 2, lo, hi), {0, 0, before, count - before - (hi - lo)});
}

// Seed 003 §III without the dense matrix (memory linear in Lq + Lk, see algorithm_for), query i
// at position p = i + offset:
//   A_i = w_i[0]·Σ_{j <= p-k} v_j + Σ_{-k < d < k} w_i[d + k]·v_{p+d} + w_i[2k]·Σ_{j >= p+k} v_j,
// the last horizon dropped when causal (keys j <= p only).
// w: [B, H, Lq, 2k + 1], values: [B, H, Lk, C] -> [B, H, Lq, C]
Var linear_product(const Var& w, const Var& values, int64_t k, bool causal, int64_t offset) {
  const int64_t q_len = w.size(2), k_len = values.size(2);
  const Device device = w.value().device();
  // Keys before the window: prefix[m] = Σ_{j < m} v_j, read at m = p - k + 1.
  const Var prefix = pad(cumsum(values, 2), {0, 0, 1, 0});  // [B, H, Lk + 1, C]
  const Tensor before = clamp_i64(range_i64(offset + 1 - k, q_len, device), 0, k_len);  // [Lq]
  Var out = slice(w, 3, 0, 1) * index_select(prefix, 2, before);  // [B, H, Lq, C]
  if (!causal) {
    // Keys after the window: suffix[m] = Σ_{j >= m} v_j, read at m = p + k.
    const Var suffix = pad(cumsum(values, 2, true), {0, 0, 0, 1});  // [B, H, Lk + 1, C]
    const Tensor after = clamp_i64(range_i64(offset + k, q_len, device), 0, k_len);  // [Lq]
    out = out + slice(w, 3, 2 * k, 2 * k + 1) * index_select(suffix, 2, after);
  }
  // The band: distances lo..hi inside the window that reach some key from some query, v_{p+d}
  // read as row i + d - lo of shifted[m] = v_{m + lo + offset} (zeros outside the keys).
  const int64_t lo = std::max(1 - k, -(offset + q_len - 1));
  const int64_t hi = std::min({k - 1, k_len - 1 - offset, causal ? int64_t{0} : k});
  if (hi < lo) return out;
  const Var shifted = rows_or_zeros(values, lo + offset, q_len + hi - lo);  // [B, H, Lq+hi-lo, C]
  for (int64_t d = lo; d <= hi; ++d)
    out = out + slice(w, 3, d + k, d + k + 1) * slice(shifted, 2, d - lo, d - lo + q_len);
  return out;
}

}  // namespace

ShawPositional::ShawPositional(const AttentionOptions& opt)
    : window_(opt.options.get_size("window", 16)),
      algorithm_(parse_algorithm(opt.options.get<std::string>("algorithm", "auto"))) {
  RELPOS_CHECK(opt.head_dim >= 1, kWhere, "head_dim must be >= 1, got {}", opt.head_dim);
  // N(0, 1) as torch.nn.Embedding: the embeddings are added to keys (eq. 4), whose entries have
  // about unit variance after a xavier projection of layer-normed inputs.
  Tensor w = Tensor::empty({2 * window_ + 1, opt.head_dim}, opt.dtype);
  normal_(w, 0.0, 1.0, opt.generator());
  weight_ = Var(w, true);
  register_parameter("weight", weight_);
}

void ShawPositional::check_host(const Attention& attention) const {
  const AttentionCaps caps = attention.caps();
  RELPOS_CHECK(caps.forms_scores || caps.kernelized, kWhere,
               "attention '{}' neither forms scores nor is kernelized; shaw needs one of them, to "
               "add S[i, j] = q_i·w_clip(j - i) to the scores or S_rel·V, S_rel·1 to the kernel "
               "sums",
               attention.name());
  const int64_t dim = weight_.size(1);
  RELPOS_CHECK(
      !caps.kernelized || caps.forms_scores || caps.feature_dim == 0 || caps.feature_dim == dim,
      kWhere,
      "attention '{}' gives phi(q) {} features, but shaw's embeddings are {} wide "
      "(S_rel = phi(q)·w needs equal sizes); use a feature map that keeps the head size "
      "(elu1, relu, sikf)",
      attention.name(), caps.feature_dim, dim);
  RELPOS_CHECK(!caps.kernelized || caps.forms_scores || algorithm_ != Algorithm::naive, kWhere,
               "algorithm 'naive' inside kernelized attention '{}' forms the dense [Lq, Lk] "
               "S_rel and makes it quadratic; use algorithm: linear, or auto, which takes the "
               "dense form only where it needs less memory (seed 003 §IV)",
               attention.name());
}

Var ShawPositional::score_bias(const Var& q, int64_t key_len, const AttentionInputs& in) {
  RELPOS_CHECK(q.dim() == 4 && q.size(3) == weight_.size(1), kWhere,
               "q must be [batch, heads, length, {}], got {}", weight_.size(1), q.value().str());
  const Var w = matmul(q, weight_, false, true);  // [B, H, Lq, 2k + 1]
  return relative_scores(w, key_len, window_, in.query_offset(q.size(2), key_len));
}

PositionTable ShawPositional::position_table(const Var& q, int64_t key_len,
                                             const AttentionInputs& in) {
  RELPOS_CHECK(q.dim() == 4 && q.size(3) == weight_.size(1), kWhere,
               "q must be [batch, heads, length, {}], got {}", weight_.size(1), q.value().str());
  // Row m embeds δ = p_i - j = m - k, i.e. j - p_i = k - m: W's row 2k - m.
  const Tensor rows = arange(static_cast<double>(2 * window_), -1, -1, DType::i64,
                             q.value().device());  // 2k, ..., 0
  return {q, unsqueeze(index_select(weight_, 0, rows), 0), in.query_offset(q.size(2), key_len),
          -window_, window_};
}

std::pair<Var, Var> ShawPositional::kernel_terms(const Var& phi_q, const Var& v,
                                                 const AttentionInputs& in) {
  RELPOS_CHECK(phi_q.dim() == 4 && phi_q.size(3) == weight_.size(1), kWhere,
               "phi(q) must be [batch, heads, length, {}] (the embeddings' width), got {}; use a "
               "feature map that keeps the head size",
               weight_.size(1), phi_q.value().str());
  const int64_t q_len = phi_q.size(2), k_len = v.size(2), value_dim = v.size(3);
  const int64_t offset = in.query_offset(q_len, k_len);
  const Var w = matmul(phi_q, weight_, false, true);  // [B, H, Lq, 2k + 1]
  const Var values = values_and_ones(v, in);          // [B, H, Lk, Dv + 1]
  const Var out = algorithm_for(q_len, k_len, value_dim) == Algorithm::linear
                      ? linear_product(w, values, window_, in.causal, offset)
                      : naive_product(w, values, window_, in.causal, offset);  // [B, H, Lq, Dv+1]
  return {slice(out, 3, 0, value_dim), slice(out, 3, value_dim, value_dim + 1)};
}

ShawPositional::Algorithm ShawPositional::algorithm_for(int64_t q_len, int64_t k_len,
                                                        int64_t value_dim) const {
  if (algorithm_ != Algorithm::automatic) return algorithm_;
  // Peak elements per (batch, head) of forward + backward, fitted to measured peaks (Lq = Lk
  // from 64 to 1024, k from 2 to 32, Dv from 4 to 32; C = Dv + 1 value columns): the dense
  // S_rel and its gradient against the linear algorithm's sums, shifted V and window weights
  // (seed 003 §IV counts Lq·(2k + 1 + 4) for the latter, leaving out the value width).
  const int64_t cols = value_dim + 1, rows = 2 * window_ + 1;
  const int64_t naive = 3 * q_len * k_len + 4 * q_len * cols + q_len * rows;
  const int64_t linear = 9 * std::max(q_len, k_len) * cols + 4 * q_len * rows;
  return linear < naive ? Algorithm::linear : Algorithm::naive;
}

RELPOS_REGISTER_POSITIONAL("shaw", ShawPositional);

}  // namespace relpos
