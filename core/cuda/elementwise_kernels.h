// Launchers of the elementwise kernels (elementwise_kernels.cu); the host glue is
// elementwise.cpp. Each returns the launch status; all run on `stream`.
#pragma once

#include <cuda_runtime.h>

#include "core/cuda/kernel_args.h"
#include "core/dtype_id.h"
#include "core/functors.h"

namespace relpos::cuda {

cudaError_t launch_copy(DType out, DType in, const StridedArgs<2>& a, cudaStream_t stream);
cudaError_t launch_fill(DType dtype, double value, const StridedArgs<1>& a, cudaStream_t stream);
cudaError_t launch_arange(DType dtype, void* out, int64_t n, double start, double step,
                          cudaStream_t stream);
cudaError_t launch_unary(UnaryOp op, DType dtype, double scalar, const StridedArgs<2>& a,
                         cudaStream_t stream);
cudaError_t launch_binary(BinaryOp op, DType dtype, double scalar, const StridedArgs<3>& a,
                          cudaStream_t stream);
// Operand 0 is the u8 result.
cudaError_t launch_compare(CompareOp op, DType dtype, const StridedArgs<3>& a, cudaStream_t stream);
// Operands: out, cond (u8), a, b.
cudaError_t launch_where(DType dtype, const StridedArgs<4>& a, cudaStream_t stream);
// Contiguous outputs of n elements from the Philox stream (seed, offset), as core/philox.h.
cudaError_t launch_random_uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset,
                                  double low, double high, cudaStream_t stream);
cudaError_t launch_random_normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset,
                                 double mean, double std, cudaStream_t stream);
cudaError_t launch_dropout_mask(uint8_t* out, int64_t n, double p, uint64_t seed, uint64_t offset,
                                cudaStream_t stream);
// Operands: out, x (out's dtype), mask (u8): out = x * (mask ? scale : 0).
cudaError_t launch_dropout_apply(DType dtype, double scale, const StridedArgs<3>& a,
                                 cudaStream_t stream);

}  // namespace relpos::cuda
