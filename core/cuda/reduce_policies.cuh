// Device-side reduction policies for reduce_kernels.cu: sum, max, the shifted sum of exp
// (logsumexp's second pass) and argmax. A policy has types In (x's), A (accumulator) and Out, and
// identity(), load(x, shift, index in R), merge(a, b), finalize(a, shift); only SumExpP reads a
// shift. Accumulators match the CPU kernels: f64 for float sums, i64 for integer sums.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/functors.h"

namespace relpos::cuda::reduction {

template <typename T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <typename T>
__device__ __forceinline__ T lowest() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

template <typename T>
__device__ __forceinline__ bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
struct SumP {
  using In = T;
  using A = Wide<T>;
  using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  static constexpr bool kShift = false;
  __device__ static A identity() { return A(0); }
  __device__ static A load(T x, T, int64_t) { return static_cast<A>(x); }
  __device__ static A merge(A a, A b) { return a + b; }
  __device__ static Out finalize(A a, T) { return static_cast<Out>(a); }
};

template <typename T>
struct MaxP {
  using In = T;
  using A = T;
  using Out = T;
  static constexpr bool kShift = false;
  __device__ static A identity() { return lowest<T>(); }
  __device__ static A load(T x, T, int64_t) { return x; }
  // The CPU's merge: a NaN on either side wins, so NaN propagates in any order.
  __device__ static A merge(A a, A b) { return fn::binary<BinaryOp::maximum, T>(a, b, T(0)); }
  __device__ static Out finalize(A a, T) { return a; }
};

// Second pass of logsumexp: shift + log(sum exp(x - shift)), where shift is the max when finite
// and 0 otherwise (an all -inf row sums exp(-inf) = 0 to -inf; +inf and NaN propagate).
template <typename T>
struct SumExpP {
  using In = T;
  using A = double;
  using Out = T;
  static constexpr bool kShift = true;
  __device__ static A identity() { return 0.0; }
  __device__ static A load(T x, T shift, int64_t) { return static_cast<A>(std::exp(x - shift)); }
  __device__ static A merge(A a, A b) { return a + b; }
  __device__ static Out finalize(A a, T shift) {
    return static_cast<T>(static_cast<double>(shift) + std::log(a));
  }
};

template <typename T>
struct ArgPair {
  T v;
  int64_t i;
};

// The first maximum: a NaN beats any number; equal values (or two NaNs) keep the smaller index.
// The merge is commutative and associative, so the tree order cannot change the answer.
template <typename T>
struct ArgMaxP {
  using In = T;
  using A = ArgPair<T>;
  using Out = int64_t;
  static constexpr bool kShift = false;
  __device__ static A identity() { return {lowest<T>(), std::numeric_limits<int64_t>::max()}; }
  __device__ static A load(T x, T, int64_t r) { return {x, r}; }
  __device__ static A merge(A a, A b) {
    const bool a_nan = is_nan(a.v), b_nan = is_nan(b.v);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.v != b.v) return a.v > b.v ? a : b;
    return a.i < b.i ? a : b;
  }
  __device__ static Out finalize(A a, T) { return a.i; }
};

}  // namespace relpos::cuda::reduction
