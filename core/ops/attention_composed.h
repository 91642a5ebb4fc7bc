// Attention composed from relpos's other ops through [B, H, Lq, Lk] scores, on any device: the
// CUDA backend's path for what its tiled kernels do not take (head sizes past their tiles, other
// dtypes), and the tiled kernels' twin in tests. The contract of the backend kernels
// (core/backend_kernels.inc): contiguous inputs, outputs allocated by the caller.
#pragma once

#include "core/ops.h"

namespace relpos::composed {

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec,
               const Tensor& out, const Tensor& lse);
void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const AttentionSpec& spec,
                        const AttentionGrads& grads);

}  // namespace relpos::composed
