// Launchers of the multi-tensor sum of squares (sum_of_squares_kernels.cu); host glue:
// sum_of_squares.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace relpos::cuda {

// One tensor of a batch: n contiguous f32 (or f64) values.
struct SquaresSlice {
  const void* data = nullptr;
  int64_t n = 0;
  bool f64 = false;
};

// Tensors per launch: the batch travels as a kernel argument, so no upload is needed.
constexpr int kSquaresPerLaunch = 32;
// Blocks per launch, fixed so the summation order (and the bits) are the same on every GPU.
constexpr int kSquaresBlocks = 256;

// partial[0, kSquaresBlocks) = each block's f64 sum of squares over slices[0, count).
cudaError_t launch_squares_batch(const SquaresSlice* slices, int count, double* partial,
                                 cudaStream_t stream);
// *out = the sum of partial[0, n) in a fixed order (one block).
cudaError_t launch_sum_partials(const double* partial, int64_t n, double* out, cudaStream_t stream);

}  // namespace relpos::cuda
