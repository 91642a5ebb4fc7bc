// Layer norm forward over the last dim of x: [R, D], same formulas as core/cpu/layer_norm.cpp:
// two-pass row statistics in f64, then y = (x - mean) * rstd * w + b in T. Rows up to 1024 long
// get one warp holding the row in registers; longer rows one block. Backward: the next file.
#include <cmath>
#include <cstdint>

#include "core/cuda/layer_norm_kernels.h"
#include "core/cuda/warp_reduce.cuh"

namespace relpos::cuda {

namespace {

constexpr int kThreads = 256;  // per block
constexpr int kRowWarps = kThreads / kWarpSize;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// x, y: [R, D] (D <= 32 * kPer), one warp per row; lane l holds columns l, l + 32, ...
template <typename T, int kPer>
__global__ void forward_warp_kernel(const T* x, const T* w, const T* b, double eps, T* y, T* mean,
                                    T* rstd, int64_t R, int D) {
  const int64_t row = blockIdx.x * int64_t{kRowWarps} + threadIdx.x / kWarpSize;
  if (row >= R) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const T* xr = x + row * D;  // xr, yr: [D]
  T* yr = y + row * D;
  T v[kPer];  // this lane's values of the row
  double sum = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    v[k] = c < D ? xr[c] : T(0);
    sum += v[k];
  }
  const double mu = warp_all_reduce(sum, AddOp{}) / D;
  double sq = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const double d = v[k] - mu;
    if (k * kWarpSize + lane < D) sq += d * d;
  }
  const double rs = 1.0 / std::sqrt(warp_all_reduce(sq, AddOp{}) / D + eps);
  const T m = static_cast<T>(mu), r = static_cast<T>(rs);
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    if (c >= D) continue;
    T o = (v[k] - m) * r;
    if (w != nullptr) o = o * w[c];
    if (b != nullptr) o = o + b[c];
    yr[c] = o;
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// The same with one block per row: x is read three times (sum, squared deviations, output).
template <typename T>
__global__ void forward_block_kernel(const T* x, const T* w, const T* b, double eps, T* y, T* mean,
                                     T* rstd, int64_t D) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * D;  // xr, yr: [D]
  T* yr = y + row * D;
  double sum = 0;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) sum += xr[c];
  const double mu = block_all_reduce(sum, AddOp{}) / static_cast<double>(D);
  double sq = 0;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) {
    const double d = xr[c] - mu;
    sq += d * d;
  }
  const double rs = 1.0 / std::sqrt(block_all_reduce(sq, AddOp{}) / static_cast<double>(D) + eps);
  const T m = static_cast<T>(mu), r = static_cast<T>(rs);
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) {
    T o = (xr[c] - m) * r;
    if (w != nullptr) o = o * w[c];
    if (b != nullptr) o = o + b[c];
    yr[c] = o;
  }
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

template <typename T>
void forward_typed(const T* x, const T* w, const T* b, double eps, T* y, T* mean, T* rstd,
                   int64_t R, int64_t D, cudaStream_t stream) {
  if (D <= kMaxRegisterRow) {
    const auto blocks = static_cast<unsigned>(ceil_div(R, kRowWarps));
    with_per_lane(D, [&](auto per) {
      forward_warp_kernel<T, decltype(per)::value>
          <<<blocks, kThreads, 0, stream>>>(x, w, b, eps, y, mean, rstd, R, static_cast<int>(D));
    });
  } else {
    forward_block_kernel<T>
        <<<static_cast<unsigned>(R), kThreads, 0, stream>>>(x, w, b, eps, y, mean, rstd, D);
  }
}

}  // namespace

cudaError_t launch_layer_norm(DType dtype, const void* x, const void* weight, const void* bias,
                              double eps, void* y, void* mean, void* rstd, int64_t R, int64_t D,
                              cudaStream_t stream) {
  if (R * D == 0) return cudaSuccess;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    forward_typed<T>(static_cast<const T*>(x), static_cast<const T*>(weight),
                     static_cast<const T*>(bias), eps, static_cast<T*>(y), static_cast<T*>(mean),
                     static_cast<T*>(rstd), R, D, stream);
  };
  if (dtype == DType::f64)
    run(TypeTag<double>{});
  else
    run(TypeTag<float>{});
  return cudaGetLastError();
}

}  // namespace relpos::cuda
