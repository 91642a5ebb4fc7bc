// Device side of the elementwise engine: a dense layout runs a flat, unrolled grid-stride loop; any
// other decodes each linear index into per-operand offsets. Functors are structs with a __device__
// operator() (the pointwise math itself comes from core/functors.h, shared with the CPU):
//   struct Add { __device__ float operator()(float x, float y) const { return x + y; } };
//   launch_elementwise<float, float, float>(args, Add{}, stream);
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/cuda/kernel_args.h"

namespace relpos::cuda {

constexpr int kThreads = 256;

// Blocks for n elements in a grid-stride loop: enough to fill the GPU, no more.
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

template <int N>
__device__ __forceinline__ void element_offsets(const StridedArgs<N>& a, int64_t i,
                                                int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = a.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % a.sizes[d];
    i /= a.sizes[d];
    for (int k = 0; k < N; ++k) off[k] += idx * a.strides[k][d];
  }
}

template <typename F, typename TOut, typename... TIn, size_t... I>
__device__ __forceinline__ void apply_at(const StridedArgs<sizeof...(TIn) + 1>& a, int64_t i,
                                         const F& f, std::index_sequence<I...>) {
  TOut* out = static_cast<TOut*>(a.data[0]);
  int64_t off[sizeof...(TIn) + 1];
  element_offsets(a, i, off);
  out[off[0]] = f(static_cast<const TIn*>(a.data[I + 1])[off[I + 1]]...);
}

// Dense operands: each thread loads kUnroll elements (a grid-stride apart, so warps stay
// coalesced) before storing any, keeping more bytes in flight per thread.
constexpr int kUnroll = 4;

template <typename F, typename TOut, typename... TIn, size_t... I>
__device__ __forceinline__ void dense_apply(const StridedArgs<sizeof...(TIn) + 1>& a, const F& f,
                                            std::index_sequence<I...>) {
  TOut* out = static_cast<TOut*>(a.data[0]);
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < a.n; i += kUnroll * stride) {
    TOut r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      r[u] = f(static_cast<const TIn*>(a.data[I + 1])[i + u * stride]...);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) out[i + u * stride] = r[u];
  }
  for (; i < a.n; i += stride) out[i] = f(static_cast<const TIn*>(a.data[I + 1])[i]...);
}

template <typename F, typename TOut, typename... TIn>
__global__ void dense_kernel(StridedArgs<sizeof...(TIn) + 1> a, F f) {
  dense_apply<F, TOut, TIn...>(a, f, std::index_sequence_for<TIn...>{});
}

template <typename F, typename TOut, typename... TIn>
__global__ void elementwise_kernel(StridedArgs<sizeof...(TIn) + 1> a, F f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < a.n;
       i += int64_t{blockDim.x} * gridDim.x)
    apply_at<F, TOut, TIn...>(a, i, f, std::index_sequence_for<TIn...>{});
}

// out = f(in...) over StridedArgs built by strided_args (operand 0 = out).
template <typename TOut, typename... TIn, typename F>
cudaError_t launch_elementwise(const StridedArgs<sizeof...(TIn) + 1>& a, F f, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  if (a.dense)
    dense_kernel<F, TOut, TIn...>
        <<<grid_for((a.n + kUnroll - 1) / kUnroll), kThreads, 0, stream>>>(a, f);
  else
    elementwise_kernel<F, TOut, TIn...><<<grid_for(a.n), kThreads, 0, stream>>>(a, f);
  return cudaGetLastError();
}

}  // namespace relpos::cuda
