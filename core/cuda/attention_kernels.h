// Launchers of the tiled attention kernels (attention_kernels.cu; FlashAttention-2, Dao 2023);
// the host glue is attention.cpp. Every buffer is contiguous: q [B, H, Lq, D], k [B, H, Lk, D],
// v [B, H, Lk, Dv], out / gout [B, H, Lq, Dv], lse / row_dot [B, H, Lq].
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
};

// True when the tiled kernels take this dtype and these head sizes on the current device (their
// tiles fit its shared memory); otherwise the caller composes the op from other kernels.
bool tiled_attention_fits(DType dtype, int64_t dim, int64_t value_dim);

// out = softmax(scale q·kᵀ) v (dropped, blocked pairs excluded), lse = each row's log-sum-exp.
cudaError_t launch_attention_forward(DType dtype, const AttentionArgs& a, const void* q,
                                     const void* k, const void* v, void* out, void* lse,
                                     cudaStream_t stream);
// dq, dk, dv from gout and the forward's lse; row_dot[i] = gout_i·out_i.
cudaError_t launch_attention_backward(DType dtype, const AttentionArgs& a, const void* q,
                                      const void* k, const void* v, const void* gout,
                                      const void* lse, const void* row_dot, void* dq, void* dk,
                                      void* dv, cudaStream_t stream);

}  // namespace relpos::cuda
