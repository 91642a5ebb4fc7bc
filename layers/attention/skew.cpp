// skew: S = truncate(transpose(diagonals 0..t3-1 of Q·E), keep Lk), added to Q·Kᵀ (seed 004,
// eq. 1 and the algorithm after it): S[i, j] = q_i · E[:, t3 - 1 - (j - p_i)], E's 2 t3 - 1 columns
// running from shift t3 - 1 (future) to -(t3 - 1) (past). The diagonals are read by a pad/reshape
// skew of Q·E with its columns reversed, so memory beyond S is O(Lq·t3) per head. Query i sits at
// position p_i = i + AttentionInputs::query_offset: causal after a memory (Lk - Lq), non-causal
// and cross attention counted from 0 (seed 004), positions below t3.
#include "layers/attention/skew.h"

#include "autograd/functions.h"
#include "core/shape.h"
#include "layers/init.h"

namespace relpos {
namespace {

constexpr const char* kWhere = "positional skew";

}  // namespace

SkewPositional::SkewPositional(const AttentionOptions& opt)
    : max_len_(opt.options.get_inherited<int64_t>("max_len", opt.max_len)) {
  RELPOS_CHECK(max_len_ >= 1, kWhere,
               "needs the longest sequence t3: set the option max_len or the layer's max_len "
               "(got {})",
               max_len_);
  check_largest_size(kWhere, "max_len", max_len_);
  RELPOS_CHECK(opt.head_dim >= 1, kWhere, "head_dim must be >= 1, got {}", opt.head_dim);
  // glorot_uniform, the default of the seed's Keras add_weight.
  Tensor e = Tensor::empty({opt.head_dim, 2 * max_len_ - 1}, opt.dtype);
  xavier_uniform_(e, opt.generator());
  weight_ = Var(e, true);
  register_parameter("weight", weight_);
}

void SkewPositional::check_host(const Attention& attention) const {
  RELPOS_CHECK(attention.caps().forms_scores, kWhere,
               "attention '{}' does not form scores: skew adds a dense score matrix S, which "
               "kernelized attention never forms; use shaw (linear-cost) or fastrpb with linear "
               "attention",
               attention.name());
}

int64_t SkewPositional::checked_offset(const Var& q, int64_t key_len,
                                       const AttentionInputs& in) const {
  RELPOS_CHECK(q.dim() == 4 && q.size(3) == weight_.size(0), kWhere,
               "q must be [batch, heads, length, {}], got {}", weight_.size(0), q.value().str());
  const int64_t q_len = q.size(2);
  const int64_t offset = in.query_offset(q_len, key_len);  // query i sits at position offset + i
  RELPOS_CHECK(offset >= 0 && offset + q_len <= max_len_ && key_len <= max_len_, kWhere,
               "query positions {}..{} and keys ({}) must lie within max_len {}", offset,
               offset + q_len - 1, key_len, max_len_);
  return offset;
}

PositionTable SkewPositional::position_table(const Var& q, int64_t key_len,
                                             const AttentionInputs& in) {
  const int64_t offset = checked_offset(q, key_len, in);
  // Every distance p_i - j lies in [-(t3 - 1), t3 - 1] (checked_offset), so nothing is clamped.
  return {q, unsqueeze(transpose(weight_, 0, 1), 0), offset, -(max_len_ - 1), max_len_ - 1};
}

Var SkewPositional::score_bias(const Var& q, int64_t key_len, const AttentionInputs& in) {
  const int64_t t3 = max_len_, width = 2 * max_len_ - 1;
  const int64_t offset = checked_offset(q, key_len, in);
  const int64_t b = q.size(0), h = q.size(1), q_len = q.size(2);
  // Columns reversed: p[i, c] = q_i · E[:, width - 1 - c] embeds the shift c - (t3 - 1), so
  // S[i, j] = p[i, j - (offset + i) + t3 - 1] (diagonals of Q·E, stacked and transposed).
  const Tensor reversed = arange(static_cast<double>(width - 1), -1, -1, DType::i64,
                                 q.value().device());           // [2 t3 - 1]
  const Var p = matmul(q, index_select(weight_, 1, reversed));  // [B, H, Lq, 2 t3 - 1]
  // Skew: rows padded to 2 t3 (plus a zero row, room for the last read), then read back with
  // row stride 2 t3 - 1 from flat element t3 - 1 - offset: (i, j) reads flat element
  // i·2 t3 + (j - offset - i + t3 - 1), which is p[i, j - (offset + i) + t3 - 1].
  const int64_t start = t3 - 1 - offset;
  const Var flat = reshape(pad(p, {0, 1, 0, 1}), {b, h, (q_len + 1) * 2 * t3});
  const Var rows = reshape(slice(flat, 2, start, start + q_len * width),
                           {b, h, q_len, width});  // [B, H, Lq, 2 t3 - 1]
  return slice(rows, 3, 0, key_len);               // [B, H, Lq, Lk]
}

RELPOS_REGISTER_POSITIONAL("skew", SkewPositional);

}  // namespace relpos
