// Multi-tensor sum of squares: each launch takes up to kSquaresPerLaunch tensors by value and
// writes one f64 partial per block (grid-stride over every tensor in turn, then a fixed-order
// block reduction); a one-block pass adds the partials in order. No atomics: same bits every run.
#include "core/cuda/sum_of_squares_kernels.h"
#include "core/cuda/warp_reduce.cuh"

namespace relpos::cuda {

namespace {

constexpr int kThreads = 256;

struct SquaresBatch {
  SquaresSlice slices[kSquaresPerLaunch];
  int count;
};

template <typename T>
__device__ __forceinline__ double fold_squares(const void* data, int64_t n, double acc) {
  const T* x = static_cast<const T*>(data);
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += stride) {
    const double v = static_cast<double>(x[i]);
    acc += v * v;
  }
  return acc;
}

__global__ void squares_batch_kernel(SquaresBatch batch, double* partial) {
  double acc = 0;
  for (int t = 0; t < batch.count; ++t) {
    const SquaresSlice& s = batch.slices[t];
    acc = s.f64 ? fold_squares<double>(s.data, s.n, acc) : fold_squares<float>(s.data, s.n, acc);
  }
  acc = block_all_reduce(acc, AddOp{});
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void sum_partials_kernel(const double* partial, int64_t n, double* out) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  acc = block_all_reduce(acc, AddOp{});
  if (threadIdx.x == 0) *out = acc;
}

}  // namespace

cudaError_t launch_squares_batch(const SquaresSlice* slices, int count, double* partial,
                                 cudaStream_t stream) {
  SquaresBatch batch{};
  for (int t = 0; t < count; ++t) batch.slices[t] = slices[t];
  batch.count = count;
  squares_batch_kernel<<<kSquaresBlocks, kThreads, 0, stream>>>(batch, partial);
  return cudaGetLastError();
}

cudaError_t launch_sum_partials(const double* partial, int64_t n, double* out,
                                cudaStream_t stream) {
  sum_partials_kernel<<<1, 1024, 0, stream>>>(partial, n, out);
  return cudaGetLastError();
}

}  // namespace relpos::cuda
