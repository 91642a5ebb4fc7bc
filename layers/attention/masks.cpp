// Blocked (query, key) pairs for padding and causality (layers/attention/masks.h).
#include "layers/attention/masks.h"

#include <cmath>

#include "autograd/functions.h"
#include "core/ops.h"

namespace relpos {

Tensor causal_blocked(int64_t q_len, int64_t k_len, Device device) {
  // j - i > Lk - Lq  <=>  key j lies after query i once both sequences end together.
  Tensor i = arange(0, static_cast<double>(q_len), 1, DType::i64, device).reshape({q_len, 1});
  Tensor j = arange(0, static_cast<double>(k_len), 1, DType::i64, device).reshape({1, k_len});
  Tensor offset = full({1, 1}, static_cast<double>(k_len - q_len), DType::i64, device);
  return gt(sub(j, i), offset);
}

Tensor outside_window(int64_t q_len, int64_t k_len, int64_t window, Device device) {
  // Query i sits at key position i + (Lk - Lq); keys j <= i + (Lk - Lq) - window are too old.
  Tensor i = arange(0, static_cast<double>(q_len), 1, DType::i64, device).reshape({q_len, 1});
  Tensor j = arange(0, static_cast<double>(k_len), 1, DType::i64, device).reshape({1, k_len});
  Tensor limit = full({1, 1}, static_cast<double>(k_len - q_len - window), DType::i64, device);
  return le(sub(j, i), limit);
}

Tensor blocked_pairs(const AttentionInputs& in, int64_t q_len, int64_t k_len, Device device) {
  Tensor blocked;
  if (in.key_mask.defined()) {
    const int64_t batch = in.key_mask.size(0);
    blocked = eq(in.key_mask, zeros({1}, DType::u8, device)).reshape({batch, 1, 1, k_len});
  }
  if (in.causal) {
    Tensor causal = causal_blocked(q_len, k_len, device);  // [Lq, Lk]
    if (in.window > 0) causal = maximum(causal, outside_window(q_len, k_len, in.window, device));
    causal = causal.reshape({1, 1, q_len, k_len});
    blocked = blocked.defined() ? maximum(blocked, causal) : causal;
  }
  return blocked;
}

Var masked_softmax(const Var& scores, const AttentionInputs& in) {
  const int64_t q_len = scores.size(-2), k_len = scores.size(-1);
  const Tensor blocked = blocked_pairs(in, q_len, k_len, scores.device());
  if (!blocked.defined()) return softmax(scores, -1);
  const Var weights = softmax(masked_fill(scores, blocked, -1e30), -1);
  // exp(-1e30 - max) is exactly 0 in a row with any visible key. Only padding, or causal queries
  // outnumbering keys, can leave a row with none (it would spread its weight evenly).
  const bool rows_may_be_empty = in.key_mask.defined() || (in.causal && q_len > k_len);
  // (A window keeps each query's own position, which is a key whenever Lq <= Lk.)
  return rows_may_be_empty ? masked_fill(weights, blocked, 0.0) : weights;
}

Var softmax_attention_from_scores(const Var& scores, const Var& q, const Var& v,
                                  const AttentionInputs& in, double p, Generator& gen,
                                  bool training) {
  const Var scaled = scores * (1.0 / std::sqrt(static_cast<double>(q.size(3))));
  const Var weights = dropout(masked_softmax(scaled, in), p, gen, training);
  return matmul(weights, v);  // [B, H, Lq, Dv]
}

AttentionSpec fused_attention_spec(const AttentionInputs& in, int64_t head_dim, double p) {
  AttentionSpec spec;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  spec.key_mask = in.key_mask;
  spec.causal = in.causal;
  spec.window = in.causal ? in.window : 0;
  spec.dropout = p;
  return spec;
}

Tensor key_keep_column(const Tensor& key_mask, DType dtype) {
  const int64_t batch = key_mask.size(0), k_len = key_mask.size(1);
  return ne(key_mask, zeros({1}, DType::u8, key_mask.device()))
      .to(dtype)
      .reshape({batch, 1, k_len, 1});
}

}  // namespace relpos
