// Launchers of the tiled attention kernels (attention_kernels.cuh; FlashAttention-2, Dao 2023);
// the host glue is attention.cpp. Every buffer is contiguous: q [B, H, Lq, D], k [B, H, Lk, D],
// v [B, H, Lk, Dv], out / gout [B, H, Lq, Dv], lse / row_dot [B, H, Lq]; with the position term
// rel_query [B, H, Lq, R] and rel_key [H or 1, T, R], T = rel_max - rel_min + 1. The operands,
// the output and their gradients have the dtype (f32, f64 or bf16); lse, row_dot, d_rel_key and
// the scratch have its compute dtype (f32 for bf16).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype_id.h"

namespace relpos::cuda {

// core/ops.h AttentionSpec as plain values.
struct AttentionArgs {
  int64_t batch = 0, heads = 0, q_len = 0, k_len = 0;
  int dim = 0, value_dim = 0;
  double scale = 1;
  const uint8_t* key_mask = nullptr;  // [B, Lk] or nullptr
  bool causal = false;
  int64_t window = 0;
  double dropout = 0;
  uint64_t seed = 0, offset = 0;
  // The position term: rel_dim R > 0 when it is present.
  int rel_dim = 0;
  const void* rel_query = nullptr;
  const void* rel_key = nullptr;
  bool rel_one_table = false;  // rel_key is [1, T, R] (else [H, T, R])
  int64_t rel_offset = 0, rel_min = 0, rel_max = 0;
};

// The backward's outputs: dq, dk, dv; with the position term also d_rel_query [B, H, Lq, R],
// d_rel_key [B, H, T, R] (each example's part) and scratch of
// rel_key_scratch_elements(a) elements of the compute dtype.
struct AttentionGradBuffers {
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  void *d_rel_query = nullptr, *d_rel_key = nullptr, *scratch = nullptr;
};

// True when the tiled kernels take this dtype and these head sizes (rel_dim 0: no position term)
// on the current device (their tiles fit its shared memory); otherwise the caller composes the op
// from other kernels.
bool tiled_attention_fits(DType dtype, int64_t dim, int64_t value_dim, int64_t rel_dim);

// The backward's scratch for d_rel_key: a band of partial sums per tile diagonal, linear in L.
int64_t rel_key_scratch_elements(const AttentionArgs& a);

// out = softmax(scale q·kᵀ) v (dropped, blocked pairs excluded), lse = each row's log-sum-exp.
cudaError_t launch_attention_forward(DType dtype, const AttentionArgs& a, const void* q,
                                     const void* k, const void* v, void* out, void* lse,
                                     cudaStream_t stream);
// The gradients from gout and the forward's lse; row_dot[i] = gout_i·out_i.
cudaError_t launch_attention_backward(DType dtype, const AttentionArgs& a, const void* q,
                                      const void* k, const void* v, const void* gout,
                                      const void* lse, const void* row_dot,
                                      const AttentionGradBuffers& grads, cudaStream_t stream);

}  // namespace relpos::cuda
