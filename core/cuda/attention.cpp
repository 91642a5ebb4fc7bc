// CUDA backend of the attention op (core/ops.h AttentionSpec). The tiled kernels
// (attention_kernels.cuh) take f32 and f64 with head sizes up to 128 (f64: 64; with the position
// term f32 up to 64 and f64 up to 32) and bf16 up to 64 (on the tensor cores): memory linear in L.
// Other f32 and f64 cases take the composed form (core/ops/attention_composed.h) on relpos's CUDA
// kernels: the same results, through [B, H, Lq, Lk] scores; other bf16 cases, the f32 ones on
// their values (core/ops/attention.cpp).
#include "core/backend.h"
#include "core/cuda/attention_kernels.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/ops.h"
#include "core/ops/attention_composed.h"

namespace relpos::cuda {

namespace {

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
  if (s.rel_query.defined()) {
    a.rel_dim = static_cast<int>(s.rel_query.size(3));
    a.rel_query = s.rel_query.raw_data();
    a.rel_key = s.rel_key.raw_data();
    a.rel_one_table = s.rel_key.size(0) == 1;
    a.rel_offset = s.rel_offset;
    a.rel_min = s.rel_min;
    a.rel_max = s.rel_max;
  }
  return a;
}

bool tiled(const Tensor& q, const Tensor& v, const AttentionSpec& s) {
  return tiled_attention_fits(q.dtype(), q.size(3), v.size(3),
                              s.rel_query.defined() ? s.rel_query.size(3) : 0);
}

}  // namespace

bool attention_takes_bf16(int64_t dim, int64_t value_dim, const AttentionSpec& spec) {
  return tiled_attention_fits(DType::bf16, dim, value_dim,
                              spec.rel_query.defined() ? spec.rel_query.size(3) : 0);
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec,
               const Tensor& out, const Tensor& lse) {
  DeviceGuard guard(q.device());
  if (tiled(q, v, spec)) {
    RELPOS_CUDA_CHECK("attention",
                      launch_attention_forward(q.dtype(), args_of(q, v, spec), q.raw_data(),
                                               k.raw_data(), v.raw_data(), out.raw_data(),
                                               lse.raw_data(), stream_of(q.device())));
    return;
  }
  composed::attention(q, k, v, spec, out, lse);
}

void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const AttentionSpec& spec,
                        const AttentionGrads& grads) {
  DeviceGuard guard(q.device());
  const bool position = spec.rel_query.defined();
  if (tiled(q, v, spec)) {
    const DType compute = lse.dtype();  // f32 for bf16 operands
    // [B, H, Lq]: D_i = dO_i·O_i
    const Tensor row_dot = sum(mul(cast(gout, compute), cast(out, compute)), {-1});
    const AttentionArgs a = args_of(q, v, spec);
    const Tensor scratch =
        position ? Tensor::empty({rel_key_scratch_elements(a)}, compute, q.device()) : Tensor();
    AttentionGradBuffers buffers{grads.dq.raw_data(), grads.dk.raw_data(), grads.dv.raw_data()};
    if (position) {
      buffers.d_rel_query = grads.drel_query.raw_data();
      buffers.d_rel_key = grads.drel_key.raw_data();
      buffers.scratch = scratch.raw_data();
    }
    RELPOS_CUDA_CHECK("attention_backward",
                      launch_attention_backward(
                          q.dtype(), a, q.raw_data(), k.raw_data(), v.raw_data(), gout.raw_data(),
                          lse.raw_data(), row_dot.raw_data(), buffers, stream_of(q.device())));
    return;
  }
  composed::attention_backward(gout, q, k, v, out, lse, spec, grads);
}

}  // namespace relpos::cuda
