// Which (query, key) pairs a query may not attend: padding keys and, when causal, keys after the
// query (aligned at the ends, AttentionInputs::causal) or outside its window; and the masked
// softmax tail that every
// variant forming scores shares. Also used by the naive twins in the tests.
#pragma once

#include "autograd/var.h"
#include "core/ops.h"
#include "layers/attention/attention.h"

namespace relpos {

// u8 [B or 1, 1, Lq or 1, Lk], 1 where blocked, on `device`; undefined when nothing is blocked.
Tensor blocked_pairs(const AttentionInputs& in, int64_t q_len, int64_t k_len, Device device);

// u8 [Lq, Lk], 1 where key j comes after query i: j > i + (Lk - Lq).
Tensor causal_blocked(int64_t q_len, int64_t k_len, Device device);
// u8 [Lq, Lk], 1 where key j lies `window` or more positions before query i (at i + Lk - Lq).
Tensor outside_window(int64_t q_len, int64_t k_len, int64_t window, Device device);

// softmax over the last dim of scores [B, H, Lq, Lk] with the pairs `in` blocks weighing exactly
// 0: a large negative logit (no NaN when a whole row is blocked), and zero weights after the
// softmax where a row may have every key blocked (so such a query outputs zeros).
Var masked_softmax(const Var& scores, const AttentionInputs& in);

// scores [B, H, Lq, Lk] scaled by 1/sqrt(D) (D = q's last dim), masked_softmax, dropout p on the
// weights (when training), times v [B, H, Lk, Dv]: the naive twin of the fused attention op.
Var softmax_attention_from_scores(const Var& scores, const Var& q, const Var& v,
                                  const AttentionInputs& in, double p, Generator& gen,
                                  bool training);

// What the fused attention op (core/ops.h AttentionSpec) needs of `in` to compute exactly
// softmax_attention_from_scores(Q·Kᵀ, ...) with dropout p: scale 1/sqrt(head_dim), the key mask,
// causality and window.
AttentionSpec fused_attention_spec(const AttentionInputs& in, int64_t head_dim, double p);

// key_mask [B, Lk] -> u8 [B, 1, Lk, 1] (1 = real key), to zero padded rows of K-side tensors.
Tensor key_keep_column(const Tensor& key_mask, DType dtype);

}  // namespace relpos
