// Launchers of the index kernels (index_kernels.cu); the host glue is index.cpp. Index operands
// are i32 or i64; ids outside [0, bound) are skipped by gather/scatter and reported by
// launch_check_ids.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/kernel_args.h"
#include "core/dtype_id.h"

namespace relpos::cuda {

// Counts the ids outside [0, bound) and finds the row-major position of the first one.
// status: [2] on the device, set to {count, first position (UINT64_MAX when none)}.
cudaError_t launch_check_ids(DType index_dtype, const StridedArgs<1>& index, int64_t bound,
                             unsigned long long* status, cudaStream_t stream);

// Operands: out, index, x (x's element for id 0: stride 0 along the indexed dim).
// out[p] = x[p + index[p] * dim_stride].
cudaError_t launch_gather(DType dtype, DType index_dtype, const StridedArgs<3>& a,
                          int64_t dim_stride, int64_t bound, cudaStream_t stream);

// Operands: src, index, out (out's element for id 0: stride 0 along the indexed dim).
// out[p + index[p] * dim_stride] += src[p], with atomics (so f32/f64 sums may be added in any
// order); u8 adds wrap modulo 256 through a compare-and-swap on the containing 32-bit word.
cudaError_t launch_scatter_add(DType dtype, DType index_dtype, const StridedArgs<3>& a,
                               int64_t dim_stride, int64_t bound, cudaStream_t stream);

}  // namespace relpos::cuda
