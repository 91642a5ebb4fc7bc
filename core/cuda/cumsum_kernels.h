// Launcher of the cumsum kernels (cumsum_kernels.cu); the host glue is cumsum.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/kernel_args.h"
#include "core/dtype_id.h"

namespace relpos::cuda {

// Inclusive prefix (or suffix, reverse) sums of `len` elements per position. positions: operand 0
// is out and operand 1 is x with the scan dim removed (their element 0 along it); along the scan,
// element j of a position is j * scan_o (scan_x) further on. Sums accumulate in double for
// floats and in int64 for integers.
cudaError_t launch_cumsum(DType dtype, const StridedArgs<2>& positions, int64_t len, int64_t scan_x,
                          int64_t scan_o, bool reverse, cudaStream_t stream);

}  // namespace relpos::cuda
