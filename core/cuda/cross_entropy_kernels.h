// Launchers of the fused cross-entropy kernels (cross_entropy_kernels.cu); the host glue is
// cross_entropy.cpp. One warp (C <= 1024) or one block per row of logits: [N, C] contiguous.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype_id.h"

namespace relpos::cuda {

// target: [N] i32/i64 with element stride t_stride. A row whose target is neither ignore_index
// nor in [0, C) is skipped and its index atomically min-ed into *bad_row, which the caller sets
// above N beforehand and checks afterwards (so the error can name the first bad row).

// losses: [N] = logsumexp(logits[n]) - logits[n, target[n]], 0 where ignored.
cudaError_t launch_cross_entropy(DType dtype, DType target_dtype, const void* logits,
                                 const void* target, int64_t t_stride, int64_t ignore_index,
                                 void* losses, int64_t N, int64_t C, unsigned long long* bad_row,
                                 cudaStream_t stream);
// dlogits: [N, C] = row_grad[n] * (softmax(logits[n]) - onehot(target[n])), 0 where ignored;
// row_grad: [N] with element stride g_stride (0 when broadcast).
cudaError_t launch_cross_entropy_backward(DType dtype, DType target_dtype, const void* logits,
                                          const void* target, int64_t t_stride,
                                          int64_t ignore_index, const void* row_grad,
                                          int64_t g_stride, void* dlogits, int64_t N, int64_t C,
                                          unsigned long long* bad_row, cudaStream_t stream);

}  // namespace relpos::cuda
