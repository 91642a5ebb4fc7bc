// Launchers of the layer norm kernels over the last dim of x: [R, D] contiguous (forward in
// layer_norm_kernels.cu, backward in layer_norm_backward_kernels.cu); the host glue is
// layer_norm.cpp. Row statistics accumulate in f64, as on the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype_id.h"

namespace relpos::cuda {

// y: [R, D]; weight, bias: [D] or null; mean, rstd: [R].
cudaError_t launch_layer_norm(DType dtype, const void* x, const void* weight, const void* bias,
                              double eps, void* y, void* mean, void* rstd, int64_t R, int64_t D,
                              cudaStream_t stream);

// Rows are split into this many blocks; each writes its partial dweight / dbias sums as one row
// of an f64 scratch [parts, D] (one per wanted gradient) that a second pass sums in order.
int64_t layer_norm_backward_parts(int64_t R, int64_t D);

// gy, x, dx: [R, D]; mean, rstd: [R]; weight: [D] or null (then g = gy). dweight, dbias: [D], or
// null when not wanted, each with its scratch part_w / part_b: [parts, D] f64.
cudaError_t launch_layer_norm_backward(DType dtype, const void* gy, const void* x, const void* mean,
                                       const void* rstd, const void* weight, void* dx,
                                       void* dweight, void* dbias, double* part_w, double* part_b,
                                       int64_t R, int64_t D, cudaStream_t stream);

}  // namespace relpos::cuda
