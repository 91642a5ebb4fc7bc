// Warp- and block-wide all-reductions with a caller's merge functor, shared by the row kernels of
// reduce, softmax, layer_norm and cross_entropy. The tree order is fixed (xor butterfly, then the
// warps' results in warp order), so results never depend on timing: no atomics.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace relpos::cuda {

constexpr int kWarpSize = 32;

// __shfl_xor_sync of any trivially copyable value (scalars, the argmax pair), 32 bits at a time.
template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  int w[kWords] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], mask);
  memcpy(&v, w, sizeof(T));
  return v;
}

// Every lane of a full warp gets merge over the 32 lanes' values. Lanes i and i^m merge the same
// pair in both orders, so a commutative merge leaves every lane with the same bits.
template <typename T, typename Merge>
__device__ __forceinline__ T warp_all_reduce(T v, Merge merge) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) v = merge(v, shfl_xor(v, mask));
  return v;
}

// Every thread of the block (blockDim.x a multiple of 32, <= 1024, one-dimensional) gets merge
// over all threads' values. All threads must call it; it may be called repeatedly.
template <typename T, typename Merge>
__device__ __forceinline__ T block_all_reduce(T v, Merge merge) {
  __shared__ T warp_vals[kWarpSize];  // warp_vals: [warps]
  v = warp_all_reduce(v, merge);
  const int warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  __syncthreads();  // a previous call may still be reading warp_vals
  if (threadIdx.x % kWarpSize == 0) warp_vals[warp] = v;
  __syncthreads();
  v = warp_vals[0];
  for (int w = 1; w < warps; ++w) v = merge(v, warp_vals[w]);
  return v;
}

struct AddOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};

// fmax: commutative, and a NaN operand yields the other one (callers that must propagate NaN
// get it through their sums of exp).
struct FmaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ __forceinline__ double operator()(double a, double b) const { return fmax(a, b); }
};

// Rows up to this long are held in registers by one warp: kPerLane values per lane.
constexpr int64_t kMaxRegisterRow = 1024;

// Calls f(std::integral_constant<int, K>{}) for the smallest K in {1, 2, 4, ..., kMax} with
// 32 * K >= D (the caller keeps D <= 32 * kMax), so a row kernel is compiled for a few fixed K.
template <int kMax = 32, int K = 1, typename F>
void with_per_lane(int64_t D, F&& f) {
  if constexpr (K >= kMax)
    f(std::integral_constant<int, K>{});
  else if (D <= int64_t{kWarpSize} * K)
    f(std::integral_constant<int, K>{});
  else
    with_per_lane<kMax, 2 * K>(D, f);
}

}  // namespace relpos::cuda
