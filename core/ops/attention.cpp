// Entry points: attention (tiled, online softmax) and its backward; shapes, dtypes, devices and
// the spec are checked here. The CUDA kernels (core/cuda/attention*.cu) get contiguous tensors;
// the CPU kernels (core/cpu/attention.cpp) read rows with any strides, so heads split from
// [B, L, H·D] projections reach them without a copy, and their results are laid out as their
// operands (a transposed [B, L, H, D] buffer for such heads), so merging the heads back is free.
#include <algorithm>
#include <cmath>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

constexpr const char* kOp = "attention";

bool has_position_term(const AttentionSpec& spec) {
  return spec.rel_query.defined() || spec.rel_key.defined();
}

// rel_query [B, H, Lq, R] and rel_key [H or 1, rel_max - rel_min + 1, R] of q's dtype and
// device, both or neither.
void check_position_term(const Tensor& q, const AttentionSpec& spec) {
  if (!has_position_term(spec)) return;
  const Tensor &rq = spec.rel_query, &rk = spec.rel_key;
  RELPOS_CHECK(rq.defined() && rk.defined(), kOp,
               "the position term needs both rel_query and rel_key, got only {}",
               rq.defined() ? "rel_query" : "rel_key");
  check_same_device(kOp, {&q, &rq, &rk});
  check_same_dtype(kOp, {&q, &rq, &rk});
  RELPOS_CHECK(spec.rel_min <= spec.rel_max, kOp, "rel_min {} must be <= rel_max {}", spec.rel_min,
               spec.rel_max);
  const int64_t rows = spec.rel_max - spec.rel_min + 1;
  RELPOS_CHECK(
      rq.dim() == 4 && rk.dim() == 3 && rq.size(0) == q.size(0) && rq.size(1) == q.size(1) &&
          rq.size(2) == q.size(2) && (rk.size(0) == q.size(1) || rk.size(0) == 1) &&
          rk.size(1) == rows && rk.size(2) == rq.size(3),
      kOp, "rel_query {} and rel_key {} do not fit [B, H, Lq, R] and [H or 1, {}, R] for q {}",
      rq.str(), rk.str(), rows, q.str());
}

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec) {
  check_defined(kOp, q, "q");
  check_defined(kOp, k, "k");
  check_defined(kOp, v, "v");
  RELPOS_CHECK(is_floating_or_bf16(q.dtype()), kOp, "expects f32, f64 or bf16 tensors, got q {}",
               q.str());
  check_same_device(kOp, {&q, &k, &v});
  check_same_dtype(kOp, {&q, &k, &v});
  RELPOS_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kOp,
               "q, k, v must be [B, H, L, D], got {}, {}, {}", q.str(), k.str(), v.str());
  RELPOS_CHECK(k.size(0) == q.size(0) && k.size(1) == q.size(1) && k.size(3) == q.size(3) &&
                   v.size(0) == q.size(0) && v.size(1) == q.size(1) && v.size(2) == k.size(2),
               kOp, "q {}, k {}, v {} do not fit [B, H, Lq, D], [B, H, Lk, D], [B, H, Lk, Dv]",
               q.str(), k.str(), v.str());
  RELPOS_CHECK(std::isfinite(spec.scale), kOp, "scale must be finite, got {}", spec.scale);
  RELPOS_CHECK(spec.dropout >= 0 && spec.dropout < 1, kOp, "dropout must be in [0, 1), got {}",
               spec.dropout);
  RELPOS_CHECK(spec.window >= 0 && (spec.window == 0 || spec.causal), kOp,
               "window must be >= 0 and needs causal, got {}", spec.window);
  check_position_term(q, spec);
  if (spec.key_mask.defined()) {
    check_same_device(kOp, {&q, &spec.key_mask});
    const Shape want{q.size(0), k.size(2)};
    RELPOS_CHECK(spec.key_mask.dtype() == DType::u8 && spec.key_mask.shape() == want, kOp,
                 "key_mask must be u8 [{}, {}], got {}", q.size(0), k.size(2), spec.key_mask.str());
  }
}

// x as the device's kernels read it: on the CPU as it is when its last dim has unit stride and
// its rows do not overlap (BLAS's leading dimension), otherwise contiguous.
Tensor kernel_operand(const Tensor& x) {
  const int64_t width = x.size(-1);
  const bool rows_readable = (width <= 1 || x.stride(-1) == 1) &&
                             (x.size(-2) <= 1 || x.stride(-2) >= std::max<int64_t>(1, width));
  return x.device().is_cpu() && rows_readable ? x : x.contiguous();
}

// The spec's tensors as the kernels read them (the key mask contiguous).
AttentionSpec kernel_spec(const AttentionSpec& spec) {
  AttentionSpec s = spec;
  if (s.key_mask.defined()) s.key_mask = s.key_mask.contiguous();
  for (Tensor* t : {&s.rel_query, &s.rel_key})
    if (t->defined()) *t = kernel_operand(*t);
  return s;
}

// An empty [B, H, L, width] result laid out as x [B, H, L, ·] is: on the CPU, when x's heads
// interleave in its rows (heads split from [B, L, H·D]), a [B, L, H, width] buffer seen as
// [B, H, L, width]; otherwise contiguous.
Tensor empty_rows_like(const Tensor& x, int64_t width, DType dtype) {
  const int64_t B = x.size(0), H = x.size(1), L = x.size(2);
  if (x.device().is_cpu() && H > 1 && L > 1 && x.stride(1) < x.stride(2))
    return Tensor::empty({B, L, H, width}, dtype, x.device()).transpose(1, 2);
  return Tensor::empty({B, H, L, width}, dtype, x.device());
}

// The log-sum-exp is computed and kept in f32 for bf16 operands.
DType lse_dtype(DType dtype) {
  return dtype == DType::bf16 ? DType::f32 : dtype;
}

// bf16 operands go through the f32 kernels (their f32 values are exact; results are rounded to
// bf16 once) unless the backend has a bf16 kernel for them.
bool through_f32(const Tensor& q, const Tensor& v, const AttentionSpec& spec) {
  if (q.dtype() != DType::bf16) return false;
  return q.device().is_cpu() ? !cpu::attention_takes_bf16(q.size(3), v.size(3), spec)
                             : !cuda::attention_takes_bf16(q.size(3), v.size(3), spec);
}

// x in dtype (cast returns x itself when it has it); an undefined x (no position term) as is.
Tensor cast_defined(const Tensor& x, DType dtype) {
  return x.defined() ? cast(x, dtype) : x;
}
Tensor to_f32(const Tensor& x) {
  return cast_defined(x, DType::f32);
}

AttentionSpec spec_in_f32(const AttentionSpec& spec) {
  AttentionSpec s = spec;
  s.rel_query = to_f32(s.rel_query);
  s.rel_key = to_f32(s.rel_key);
  return s;
}

}  // namespace

AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v,
                          const AttentionSpec& spec) {
  check_inputs(q, k, v, spec);
  if (through_f32(q, v, spec)) {
    AttentionResult r = attention(to_f32(q), to_f32(k), to_f32(v), spec_in_f32(spec));
    return {cast(r.out, DType::bf16), r.lse};
  }
  AttentionResult r{
      empty_rows_like(q, v.size(3), q.dtype()),
      Tensor::empty({q.size(0), q.size(1), q.size(2)}, lse_dtype(q.dtype()), q.device())};
  if (r.lse.numel() == 0) return r;
  const Tensor qc = kernel_operand(q), kc = kernel_operand(k), vc = kernel_operand(v);
  const AttentionSpec s = kernel_spec(spec);
  if (q.device().is_cpu())
    cpu::attention(qc, kc, vc, s, r.out, r.lse);
  else
    cuda::attention(qc, kc, vc, s, r.out, r.lse);
  return r;
}

AttentionGrads attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const AttentionResult& forward,
                                  const AttentionSpec& spec) {
  check_inputs(q, k, v, spec);
  const Tensor& out = forward.out;
  const Tensor& lse = forward.lse;
  check_same_device(kOp, {&q, &gout, &out, &lse});
  check_same_dtype(kOp, {&q, &gout, &out});
  RELPOS_CHECK(lse.dtype() == lse_dtype(q.dtype()), kOp, "lse must be {} for {} operands, got {}",
               dtype_name(lse_dtype(q.dtype())), dtype_name(q.dtype()), lse.str());
  const Shape out_shape{q.size(0), q.size(1), q.size(2), v.size(3)};
  RELPOS_CHECK(gout.shape() == out_shape && out.shape() == out_shape &&
                   lse.shape() == Shape(out_shape.begin(), out_shape.end() - 1),
               kOp, "gradient {}, output {} and lse {} do not fit the output shape {}", gout.str(),
               out.str(), lse.str(), shape_str(out_shape));
  if (through_f32(q, v, spec)) {
    AttentionGrads g = attention_backward(to_f32(gout), to_f32(q), to_f32(k), to_f32(v),
                                          {to_f32(out), lse}, spec_in_f32(spec));
    for (Tensor* t : {&g.dq, &g.dk, &g.dv, &g.drel_query, &g.drel_key})
      *t = cast_defined(*t, DType::bf16);
    return g;
  }
  AttentionGrads g{empty_rows_like(q, q.size(3), q.dtype()),
                   empty_rows_like(k, k.size(3), k.dtype()),
                   empty_rows_like(v, v.size(3), v.dtype()),
                   {},
                   {}};
  const bool position = has_position_term(spec);
  if (position) {
    const Tensor& rk = spec.rel_key;  // each (example, head)'s part, in f32 for bf16
    g.drel_query = empty_rows_like(spec.rel_query, spec.rel_query.size(3), q.dtype());
    g.drel_key = Tensor::empty({q.size(0), q.size(1), rk.size(1), rk.size(2)}, lse_dtype(q.dtype()),
                               q.device());
  }
  if (lse.numel() == 0 || k.size(2) == 0) {  // no query or no key: every gradient is 0
    for (Tensor* t : {&g.dq, &g.dk, &g.dv, &g.drel_query, &g.drel_key})
      if (t->defined() && t->numel() > 0) fill_(*t, 0);
  } else {
    const Tensor gc = kernel_operand(gout), qc = kernel_operand(q), kc = kernel_operand(k),
                 vc = kernel_operand(v), oc = kernel_operand(out), lc = lse.contiguous();
    const AttentionSpec s = kernel_spec(spec);
    if (q.device().is_cpu())
      cpu::attention_backward(gc, qc, kc, vc, oc, lc, s, g);
    else
      cuda::attention_backward(gc, qc, kc, vc, oc, lc, s, g);
  }
  if (position)  // rel_key serves every example (and, when [1, T, R], every head)
    g.drel_key = cast(
        spec.rel_key.size(0) == 1 ? sum(g.drel_key, {0, 1}).unsqueeze(0) : sum(g.drel_key, {0}),
        q.dtype());
  return g;
}

}  // namespace relpos
