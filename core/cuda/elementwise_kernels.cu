// Elementwise kernels: copy/cast, fill, arange, the unary/binary/compare functors of
// core/functors.h (on bf16 storage too, computed in f32), where, and Philox sampling
// (bit-identical to the CPU loops).
#include "core/cuda/elementwise.cuh"
#include "core/cuda/elementwise_kernels.h"
#include "core/philox.h"

namespace relpos::cuda {

namespace {

template <typename TO, typename TI>
struct CastTo {
  __device__ TO operator()(TI x) const { return static_cast<TO>(x); }
};
template <typename T>
struct Constant {
  T value;
  __device__ T operator()() const { return value; }
};
template <UnaryOp Op, typename T>
struct UnaryF {
  T s;
  __device__ T operator()(T x) const { return fn::unary<Op, T>(x, s); }
};
template <BinaryOp Op, typename T>
struct BinaryF {
  T s;
  __device__ T operator()(T a, T b) const { return fn::binary<Op, T>(a, b, s); }
};
template <CompareOp Op, typename T>
struct CompareF {
  __device__ uint8_t operator()(T a, T b) const { return fn::compare<Op, T>(a, b); }
};
// bf16 storage, f32 math: the same functors on the values converted to f32, rounded back.
template <UnaryOp Op>
struct UnaryBf16 {
  float s;
  __device__ bf16 operator()(bf16 x) const { return bf16(fn::unary<Op, float>(x, s)); }
};
template <BinaryOp Op>
struct BinaryBf16 {
  float s;
  __device__ bf16 operator()(bf16 a, bf16 b) const { return bf16(fn::binary<Op, float>(a, b, s)); }
};
template <typename T>
struct WhereF {
  __device__ T operator()(uint8_t c, T a, T b) const { return c ? a : b; }
};
// Dropout's product with the u8 keep mask (core/cpu/dropout_apply.cpp): x * (keep ? s : 0).
template <typename T>
struct DropoutApplyF {
  T s;
  __device__ T operator()(T x, uint8_t keep) const { return x * (keep != 0 ? s : T(0)); }
};
struct DropoutApplyBf16 {
  float s;
  __device__ bf16 operator()(bf16 x, uint8_t keep) const {
    return bf16(float(x) * (keep != 0 ? s : 0.0f));
  }
};

template <typename T>
__global__ void arange_kernel(T* out, int64_t n, double start, double step) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    out[i] = static_cast<T>(start + step * static_cast<double>(i));
}

template <typename T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double low,
                               double high) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const T v = static_cast<T>(low + (high - low) * philox::uniform(seed, offset, i));
    out[i] = v < static_cast<T>(high) ? v : std::nextafter(static_cast<T>(high), T(low));
  }
}

template <typename T>
__global__ void normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean,
                              double std) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    out[i] = static_cast<T>(mean + std * philox::normal(seed, offset, i));
}

__global__ void dropout_kernel(uint8_t* out, int64_t n, double p, uint64_t seed, uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    out[i] = philox::uniform(seed, offset, i) >= p ? 1 : 0;
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T>;

}  // namespace

cudaError_t launch_copy(DType out, DType in, const StridedArgs<2>& a, cudaStream_t stream) {
  return visit_dtype_or_bf16(out, [&](auto o) {
    using TO = typename decltype(o)::type;
    return visit_dtype_or_bf16(in, [&](auto i) {
      using TI = typename decltype(i)::type;
      return launch_elementwise<TO, TI>(a, CastTo<TO, TI>{}, stream);
    });
  });
}

cudaError_t launch_fill(DType dtype, double value, const StridedArgs<1>& a, cudaStream_t stream) {
  return visit_dtype_or_bf16(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<T>(a, Constant<T>{static_cast<T>(value)}, stream);
  });
}

cudaError_t launch_arange(DType dtype, void* out, int64_t n, double start, double step,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    arange_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, start, step);
  });
  return cudaGetLastError();
}

cudaError_t launch_unary(UnaryOp op, DType dtype, double scalar, const StridedArgs<2>& a,
                         cudaStream_t stream) {
  if (dtype == DType::bf16)
    return visit_unary(op, [&](auto c) {
      return launch_elementwise<bf16, bf16>(
          a, UnaryBf16<decltype(c)::value>{static_cast<float>(scalar)}, stream);
    });
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_unary(op, [&](auto c) {
      constexpr UnaryOp kOp = decltype(c)::value;
      if constexpr (is_float_v<T> || unary_accepts_integers(kOp)) {
        return launch_elementwise<T, T>(a, UnaryF<kOp, T>{static_cast<T>(scalar)}, stream);
      } else {
        return cudaErrorInvalidValue;  // rejected by the entry point before reaching here
      }
    });
  });
}

cudaError_t launch_binary(BinaryOp op, DType dtype, double scalar, const StridedArgs<3>& a,
                          cudaStream_t stream) {
  if (dtype == DType::bf16)
    return visit_binary(op, [&](auto c) {
      return launch_elementwise<bf16, bf16, bf16>(
          a, BinaryBf16<decltype(c)::value>{static_cast<float>(scalar)}, stream);
    });
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_binary(op, [&](auto c) {
      constexpr BinaryOp kOp = decltype(c)::value;
      if constexpr (is_float_v<T> || binary_accepts_integers(kOp)) {
        return launch_elementwise<T, T, T>(a, BinaryF<kOp, T>{static_cast<T>(scalar)}, stream);
      } else {
        return cudaErrorInvalidValue;  // rejected by the entry point before reaching here
      }
    });
  });
}

cudaError_t launch_compare(CompareOp op, DType dtype, const StridedArgs<3>& a,
                           cudaStream_t stream) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_compare(op, [&](auto c) {
      return launch_elementwise<uint8_t, T, T>(a, CompareF<decltype(c)::value, T>{}, stream);
    });
  });
}

cudaError_t launch_where(DType dtype, const StridedArgs<4>& a, cudaStream_t stream) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return launch_elementwise<T, uint8_t, T, T>(a, WhereF<T>{}, stream);
  });
}

cudaError_t launch_dropout_apply(DType dtype, double scale, const StridedArgs<3>& a,
                                 cudaStream_t stream) {
  if (dtype == DType::bf16)
    return launch_elementwise<bf16, bf16, uint8_t>(a, DropoutApplyBf16{static_cast<float>(scale)},
                                                   stream);
  if (dtype == DType::f64)
    return launch_elementwise<double, double, uint8_t>(a, DropoutApplyF<double>{scale}, stream);
  return launch_elementwise<float, float, uint8_t>(
      a, DropoutApplyF<float>{static_cast<float>(scale)}, stream);
}

cudaError_t launch_random_uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset,
                                  double low, double high, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == DType::f64)
    uniform_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<double*>(out), n, seed, offset,
                                                         low, high);
  else
    uniform_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<float*>(out), n, seed, offset,
                                                         low, high);
  return cudaGetLastError();
}

cudaError_t launch_random_normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset,
                                 double mean, double std, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == DType::f64)
    normal_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<double*>(out), n, seed, offset,
                                                        mean, std);
  else
    normal_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<float*>(out), n, seed, offset,
                                                        mean, std);
  return cudaGetLastError();
}

cudaError_t launch_dropout_mask(uint8_t* out, int64_t n, double p, uint64_t seed, uint64_t offset,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  dropout_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, n, p, seed, offset);
  return cudaGetLastError();
}

}  // namespace relpos::cuda
