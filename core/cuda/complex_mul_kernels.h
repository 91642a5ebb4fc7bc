// Launcher of the complex_mul kernel (complex_mul_kernels.cu); the host glue is complex_mul.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/kernel_args.h"
#include "core/dtype_id.h"

namespace relpos::cuda {

// positions: out, a, b with the trailing (re, im) dim removed (their re elements); a position's
// im element is 1 (out), pair_a (a) or pair_b (b) elements after its re. dtype f32 or f64.
cudaError_t launch_complex_mul(DType dtype, const StridedArgs<3>& positions, int64_t pair_a,
                               int64_t pair_b, bool conj_b, cudaStream_t stream);

}  // namespace relpos::cuda
