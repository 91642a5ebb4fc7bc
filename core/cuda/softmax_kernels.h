// Launchers of the fused softmax / log_softmax kernels and their backward (softmax_kernels.cu);
// the host glue is softmax.cpp. Buffers are contiguous, seen as [outer, D, inner], reduced over D.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype_id.h"

namespace relpos::cuda {

// True when the environment has RELPOS_CUDNN_SOFTMAX=1: softmax then runs on cuDNN
// (cudnnSoftmaxForward / Backward, CUDNN_SOFTMAX_ACCURATE or _LOG) instead of the kernels below.
// Read on every call, so a benchmark or test can compare the two in one process.
bool use_cudnn_softmax();

// x, y: [outer, D, inner] f32/f64.
cudaError_t launch_softmax(DType dtype, const void* x, void* y, int64_t outer, int64_t D,
                           int64_t inner, bool log, cudaStream_t stream);
// y (the forward output), gy, gx: [outer, D, inner]. softmax: gx = y * (gy - sum(gy * y));
// log_softmax: gx = gy - exp(y) * sum(gy).
cudaError_t launch_softmax_backward(DType dtype, const void* y, const void* gy, void* gx,
                                    int64_t outer, int64_t D, int64_t inner, bool log,
                                    cudaStream_t stream);

}  // namespace relpos::cuda
