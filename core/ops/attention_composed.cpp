// Attention composed from relpos's other ops (ops/attention_composed.h): the scores, the
// masked softmax with its log-sum-exp, dropout from the Philox mask, the position term gathered
// from one product rel_query·rel_keyᵀ, and the backward from the weights recomputed with the saved
// log-sum-exp.
#include "core/ops/attention_composed.h"

#include <cmath>

#include "core/backend.h"
#include "core/ops.h"

namespace relpos::composed {

namespace {

constexpr double kBlockedLogit = -1e30;  // finite, so a row with nothing visible stays NaN-free

// u8 [B or 1, 1, Lq, Lk], 1 where the spec blocks the pair; undefined when nothing is blocked.
Tensor blocked_pairs(const AttentionSpec& s, int64_t q_len, int64_t k_len, Device device) {
  Tensor blocked;
  if (s.key_mask.defined()) {
    const int64_t batch = s.key_mask.size(0);
    blocked = eq(s.key_mask, zeros({1}, DType::u8, device)).reshape({batch, 1, 1, k_len});
  }
  if (s.causal) {
    const Tensor i =
        arange(0, static_cast<double>(q_len), 1, DType::i64, device).reshape({q_len, 1});
    const Tensor j =
        arange(0, static_cast<double>(k_len), 1, DType::i64, device).reshape({1, k_len});
    const Tensor ahead = sub(j, i);  // key j sits (j - i) - (Lk - Lq) positions after query i
    Tensor causal = gt(ahead, full({1, 1}, static_cast<double>(k_len - q_len), DType::i64, device));
    if (s.window > 0)
      causal = maximum(causal, le(ahead, full({1, 1}, static_cast<double>(k_len - q_len - s.window),
                                              DType::i64, device)));
    causal = causal.reshape({1, 1, q_len, k_len});
    blocked = blocked.defined() ? maximum(blocked, causal) : causal;
  }
  return blocked;
}

// i64 [B, H, Lq, Lk]: the position term's table row of pair (i, j), rel_row(i + rel_offset - j)
// (core/ops.h AttentionSpec); undefined without the term.
Tensor position_rows(const AttentionSpec& s, const Tensor& q, int64_t k_len) {
  if (!s.rel_query.defined()) return {};
  const int64_t batch = q.size(0), heads = q.size(1), q_len = q.size(2);
  const Device device = q.device();
  const auto scalar = [&](int64_t x) {
    return full({1, 1}, static_cast<double>(x), DType::i64, device);
  };
  const Tensor i = arange(0, static_cast<double>(q_len), 1, DType::i64, device).reshape({q_len, 1});
  const Tensor j = arange(0, static_cast<double>(k_len), 1, DType::i64, device).reshape({1, k_len});
  const Tensor delta = add(sub(i, j), scalar(s.rel_offset));  // [Lq, Lk]
  const Tensor row =
      sub(minimum(maximum(delta, scalar(s.rel_min)), scalar(s.rel_max)), scalar(s.rel_min));
  return row.reshape({1, 1, q_len, k_len}).expand({batch, heads, q_len, k_len}).contiguous();
}

// The scaled scores scale (Q·Kᵀ + rel_query·rel_key[row(i, j)]): [B, H, Lq, Lk].
Tensor scores_of(const Tensor& q, const Tensor& k, const AttentionSpec& spec, const Tensor& rows) {
  Tensor s = matmul(q, k, false, true);
  if (rows.defined())
    s = add(s, gather(matmul(spec.rel_query, spec.rel_key.unsqueeze(0), false, true), 3, rows));
  return mul_scalar(s, spec.scale);
}

// The weights softmax(scores) with blocked pairs 0, from the saved log-sum-exp.
Tensor weights_of(const Tensor& q, const Tensor& k, const Tensor& lse, const Tensor& blocked,
                  const AttentionSpec& spec, const Tensor& rows) {
  Tensor s = scores_of(q, k, spec, rows);  // [B, H, Lq, Lk]
  if (blocked.defined()) s = masked_fill(s, blocked, kBlockedLogit);
  // A row with no visible key has lse -inf; every pair of it is blocked and zeroed below.
  const Tensor finite_lse = masked_fill(lse, eq(lse, full_like(lse, -INFINITY)), 0.0);
  Tensor p = exp(sub(s, finite_lse.unsqueeze(-1)));
  return blocked.defined() ? masked_fill(p, blocked, 0.0) : p;
}

// 1/(1 - p) where the forward kept a weight, 0 where it dropped it: [B, H, Lq, Lk].
Tensor dropout_scale(const AttentionSpec& s, const Shape& shape, DType dtype, Device device) {
  const Tensor mask = Tensor::empty(shape, DType::u8, device);
  if (device.is_cpu())
    cpu::dropout_mask(mask, s.dropout, s.seed, s.offset);
  else
    cuda::dropout_mask(mask, s.dropout, s.seed, s.offset);
  return mul_scalar(cast(mask, dtype), 1.0 / (1.0 - s.dropout));
}

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec,
               const Tensor& out, const Tensor& lse) {
  const int64_t q_len = q.size(2), k_len = k.size(2);
  const Tensor blocked = blocked_pairs(spec, q_len, k_len, q.device());
  Tensor s = scores_of(q, k, spec, position_rows(spec, q, k_len));  // [B, H, Lq, Lk]
  if (blocked.defined()) s = masked_fill(s, blocked, kBlockedLogit);
  const Tensor row_max = max(s, {-1}, true);
  Tensor p = exp(sub(s, row_max));
  const Tensor row_sum = sum(p, {-1}, true);
  p = div(p, row_sum);
  Tensor row_lse = add(row_max, log(row_sum)).reshape(lse.shape());
  if (blocked.defined()) {
    p = masked_fill(p, blocked, 0.0);
    // Only a row with nothing visible has its maximum at the blocked logit.
    row_lse = masked_fill(
        row_lse, le(row_max.reshape(lse.shape()), full_like(lse, 0.5 * kBlockedLogit)), -INFINITY);
  }
  if (spec.dropout > 0) p = mul(p, dropout_scale(spec, p.shape(), p.dtype(), p.device()));
  copy_(out, matmul(p, v));
  copy_(lse, row_lse);
}

void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const AttentionSpec& spec,
                        const AttentionGrads& grads) {
  const Tensor &dq = grads.dq, &dk = grads.dk, &dv = grads.dv;
  const bool position = spec.rel_query.defined();
  const Tensor blocked = blocked_pairs(spec, q.size(2), k.size(2), q.device());
  const Tensor rows = position_rows(spec, q, k.size(2));
  const Tensor p = weights_of(q, k, lse, blocked, spec, rows);  // [B, H, Lq, Lk]
  Tensor dp = matmul(gout, v, false, true);
  Tensor kept = p;
  if (spec.dropout > 0) {
    const Tensor keep = dropout_scale(spec, p.shape(), p.dtype(), p.device());
    dp = mul(dp, keep);
    kept = mul(p, keep);
  }
  copy_(dv, matmul(kept, gout, true, false));
  const Tensor row_dot = sum(mul(gout, out), {-1}, true);  // D_i = dO_i·O_i
  const Tensor ds = mul(p, sub(dp, row_dot));
  copy_(dq, mul_scalar(matmul(ds, k), spec.scale));
  copy_(dk, mul_scalar(matmul(ds, q, true, false), spec.scale));
  if (position) {  // dG [B, H, Lq, T]: each pair's dS summed into its table row
    const Shape g_shape{q.size(0), q.size(1), q.size(2), spec.rel_key.size(1)};
    const Tensor dg = scatter_add(zeros(g_shape, q.dtype(), q.device()), 3, rows, ds);
    copy_(grads.drel_query,
          mul_scalar(matmul(dg, spec.rel_key.unsqueeze(0), false, false), spec.scale));
    copy_(grads.drel_key, mul_scalar(matmul(dg, spec.rel_query, true, false), spec.scale));
  }
}

}  // namespace relpos::composed
