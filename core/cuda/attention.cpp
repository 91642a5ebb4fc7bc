// CUDA backend of the attention op (core/ops.h AttentionSpec). The tiled kernels
// (attention_kernels.cu) take f32 and f64 with head sizes up to 128 (f64: 64): memory linear in L.
// Other head sizes are composed from relpos's own CUDA kernels (cuBLAS GEMMs, softmax-style
// reductions, the Philox dropout mask): the same results, through [B, H, Lq, Lk] scores.
#include <cmath>

#include "core/backend.h"
#include "core/cuda/attention_kernels.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/ops.h"

namespace relpos::cuda {

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

// The weights softmax(scale Q·Kᵀ) with blocked pairs 0, from the saved log-sum-exp.
Tensor weights_of(const Tensor& q, const Tensor& k, const Tensor& lse, const Tensor& blocked,
                  double scale) {
  Tensor s = mul_scalar(matmul(q, k, false, true), scale);  // [B, H, Lq, Lk]
  if (blocked.defined()) s = masked_fill(s, blocked, kBlockedLogit);
  // A row with no visible key has lse -inf; every pair of it is blocked and zeroed below.
  const Tensor finite_lse = masked_fill(lse, eq(lse, full_like(lse, -INFINITY)), 0.0);
  Tensor p = exp(sub(s, finite_lse.unsqueeze(-1)));
  return blocked.defined() ? masked_fill(p, blocked, 0.0) : p;
}

// 1/(1 - p) where the forward kept a weight, 0 where it dropped it: [B, H, Lq, Lk].
Tensor dropout_scale(const AttentionSpec& s, const Shape& shape, DType dtype, Device device) {
  const Tensor mask = Tensor::empty(shape, DType::u8, device);
  dropout_mask(mask, s.dropout, s.seed, s.offset);
  return mul_scalar(cast(mask, dtype), 1.0 / (1.0 - s.dropout));
}

AttentionArgs args_of(const Tensor& q, const Tensor& v, const AttentionSpec& s) {
  AttentionArgs a;
  a.batch = q.size(0);
  a.heads = q.size(1);
  a.q_len = q.size(2);
  a.k_len = v.size(2);
  a.dim = static_cast<int>(q.size(3));
  a.value_dim = static_cast<int>(v.size(3));
  a.scale = s.scale;
  a.key_mask = s.key_mask.defined() ? s.key_mask.data<uint8_t>() : nullptr;
  a.causal = s.causal;
  a.window = s.window;
  a.dropout = s.dropout;
  a.seed = s.seed;
  a.offset = s.offset;
  return a;
}

bool tiled(const Tensor& q, const Tensor& v) {
  return tiled_attention_fits(q.dtype(), q.size(3), v.size(3));
}

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec,
               const Tensor& out, const Tensor& lse) {
  DeviceGuard guard(q.device());
  if (tiled(q, v)) {
    RELPOS_CUDA_CHECK("attention",
                      launch_attention_forward(q.dtype(), args_of(q, v, spec), q.raw_data(),
                                               k.raw_data(), v.raw_data(), out.raw_data(),
                                               lse.raw_data(), stream_of(q.device())));
    return;
  }
  const int64_t q_len = q.size(2), k_len = k.size(2);
  const Tensor blocked = blocked_pairs(spec, q_len, k_len, q.device());
  Tensor s = mul_scalar(matmul(q, k, false, true), spec.scale);  // [B, H, Lq, Lk]
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
  DeviceGuard guard(q.device());
  if (tiled(q, v)) {
    const Tensor row_dot = sum(mul(gout, out), {-1});  // [B, H, Lq]: D_i = dO_i·O_i
    RELPOS_CUDA_CHECK("attention_backward",
                      launch_attention_backward(
                          q.dtype(), args_of(q, v, spec), q.raw_data(), k.raw_data(), v.raw_data(),
                          gout.raw_data(), lse.raw_data(), row_dot.raw_data(), dq.raw_data(),
                          dk.raw_data(), dv.raw_data(), stream_of(q.device())));
    return;
  }
  const Tensor blocked = blocked_pairs(spec, q.size(2), k.size(2), q.device());
  const Tensor p = weights_of(q, k, lse, blocked, spec.scale);  // [B, H, Lq, Lk]
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
}

}  // namespace relpos::cuda
