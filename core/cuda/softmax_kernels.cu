// Fused softmax / log_softmax and backward over D of [outer, D, inner], numerically stable (the
// row max is subtracted before exp). Last-dim rows (inner == 1) up to 1024 long: one warp per row
// holding it in registers (one read, one write); longer rows: one block per row; inner > 1: tiles
// of 32 columns with 8 lanes splitting D. Same formulas as core/cpu/softmax.cpp, sums in T.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda/softmax_kernels.h"
#include "core/cuda/warp_reduce.cuh"

namespace relpos::cuda {

namespace {

constexpr int kThreads = 256;  // per block, in every kernel below
constexpr int kRowWarps = kThreads / kWarpSize;
constexpr int kTileX = 32, kTileY = 8;  // column tile: 32 columns x 8 lanes along D

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

template <typename T>
__device__ __forceinline__ T neg_inf() {
  return -std::numeric_limits<T>::infinity();
}

// Every thread of the (kTileX, kTileY) block gets merge over the kTileY lanes of its column, in
// lane order.
template <typename T, typename Merge>
__device__ __forceinline__ T column_all_reduce(T v, Merge merge, T (&part)[kTileY][kTileX]) {
  __syncthreads();  // a previous call may still be reading part
  part[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  v = part[0][threadIdx.x];
  for (int y = 1; y < kTileY; ++y) v = merge(v, part[y][threadIdx.x]);
  return v;
}

// x, y: [rows, D], D <= 32 * kPer. Lane l holds columns l, l + 32, ...
template <typename T, int kPer, bool kLog>
__global__ void softmax_warp_kernel(const T* x, T* y, int64_t rows, int D) {
  const int64_t row = blockIdx.x * int64_t{kRowWarps} + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const T* xr = x + row * D;  // xr, yr: [D]
  T* yr = y + row * D;
  T v[kPer];  // v: this lane's values of the row
  T m = neg_inf<T>();
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    v[k] = c < D ? xr[c] : neg_inf<T>();
    m = FmaxOp{}(m, v[k]);
  }
  m = warp_all_reduce(m, FmaxOp{});
  T sum = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    if (k * kWarpSize + lane < D) {
      const T e = std::exp(v[k] - m);
      sum += e;
      if constexpr (!kLog) v[k] = e;
    }
  }
  sum = warp_all_reduce(sum, AddOp{});
  const T s = kLog ? std::log(sum) : T(1) / sum;  // log(sum), or 1 / sum
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    if (c < D) yr[c] = kLog ? (v[k] - m) - s : v[k] * s;
  }
}

// x, y: [rows, D], one block per row; x is read three times (max, sum, output).
template <typename T, bool kLog>
__global__ void softmax_block_kernel(const T* x, T* y, int64_t D) {
  const T* xr = x + blockIdx.x * D;  // xr, yr: [D]
  T* yr = y + blockIdx.x * D;
  T m = neg_inf<T>();
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) m = FmaxOp{}(m, xr[c]);
  m = block_all_reduce(m, FmaxOp{});
  T sum = 0;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) sum += std::exp(xr[c] - m);
  sum = block_all_reduce(sum, AddOp{});
  const T s = kLog ? std::log(sum) : T(1) / sum;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x)
    yr[c] = kLog ? (xr[c] - m) - s : std::exp(xr[c] - m) * s;
}

// x, y: [outer, D, inner]; block (kTileX, kTileY) per (o, tile of 32 columns i).
template <typename T, bool kLog>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t D, int64_t inner, int64_t tiles) {
  __shared__ T part[kTileY][kTileX];
  const int64_t o = blockIdx.x / tiles, i = (blockIdx.x % tiles) * kTileX + threadIdx.x;
  const bool active = i < inner;
  auto at = [&](int64_t d) { return (o * D + d) * inner + i; };
  T m = neg_inf<T>();
  if (active)
    for (int64_t d = threadIdx.y; d < D; d += kTileY) m = FmaxOp{}(m, x[at(d)]);
  m = column_all_reduce(m, FmaxOp{}, part);
  T sum = 0;
  if (active)
    for (int64_t d = threadIdx.y; d < D; d += kTileY) sum += std::exp(x[at(d)] - m);
  sum = column_all_reduce(sum, AddOp{}, part);
  const T s = kLog ? std::log(sum) : T(1) / sum;
  if (active)
    for (int64_t d = threadIdx.y; d < D; d += kTileY)
      y[at(d)] = kLog ? (x[at(d)] - m) - s : std::exp(x[at(d)] - m) * s;
}

// Backward: acc = sum(gy) (log) or sum(gy * y); gx = gy - exp(y) * acc or y * (gy - acc).
template <typename T, bool kLog>
__device__ __forceinline__ T backward_term(T y, T g) {
  return kLog ? g : g * y;
}
template <typename T, bool kLog>
__device__ __forceinline__ T backward_out(T y, T g, T acc) {
  return kLog ? g - std::exp(y) * acc : y * (g - acc);
}

template <typename T, int kPer, bool kLog>
__global__ void backward_warp_kernel(const T* y, const T* gy, T* gx, int64_t rows, int D) {
  const int64_t row = blockIdx.x * int64_t{kRowWarps} + threadIdx.x / kWarpSize;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t base = row * D;
  T yv[kPer], gv[kPer];  // this lane's values of the row
  T acc = 0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    yv[k] = c < D ? y[base + c] : T(0);
    gv[k] = c < D ? gy[base + c] : T(0);
    acc += backward_term<T, kLog>(yv[k], gv[k]);  // padding adds 0
  }
  acc = warp_all_reduce(acc, AddOp{});
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    if (c < D) gx[base + c] = backward_out<T, kLog>(yv[k], gv[k], acc);
  }
}

template <typename T, bool kLog>
__global__ void backward_block_kernel(const T* y, const T* gy, T* gx, int64_t D) {
  const int64_t base = blockIdx.x * D;
  T acc = 0;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x)
    acc += backward_term<T, kLog>(y[base + c], gy[base + c]);
  acc = block_all_reduce(acc, AddOp{});
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x)
    gx[base + c] = backward_out<T, kLog>(y[base + c], gy[base + c], acc);
}

template <typename T, bool kLog>
__global__ void backward_cols_kernel(const T* y, const T* gy, T* gx, int64_t D, int64_t inner,
                                     int64_t tiles) {
  __shared__ T part[kTileY][kTileX];
  const int64_t o = blockIdx.x / tiles, i = (blockIdx.x % tiles) * kTileX + threadIdx.x;
  const bool active = i < inner;
  auto at = [&](int64_t d) { return (o * D + d) * inner + i; };
  T acc = 0;
  if (active)
    for (int64_t d = threadIdx.y; d < D; d += kTileY)
      acc += backward_term<T, kLog>(y[at(d)], gy[at(d)]);
  acc = column_all_reduce(acc, AddOp{}, part);
  if (active)
    for (int64_t d = threadIdx.y; d < D; d += kTileY)
      gx[at(d)] = backward_out<T, kLog>(y[at(d)], gy[at(d)], acc);
}

template <typename T, bool kLog>
void forward_typed(const T* x, T* y, int64_t outer, int64_t D, int64_t inner, cudaStream_t stream) {
  if (inner > 1) {
    const int64_t tiles = ceil_div(inner, kTileX);
    softmax_cols_kernel<T, kLog>
        <<<static_cast<unsigned>(outer * tiles), dim3(kTileX, kTileY), 0, stream>>>(x, y, D, inner,
                                                                                    tiles);
  } else if (D <= kMaxRegisterRow) {
    const auto blocks = static_cast<unsigned>(ceil_div(outer, kRowWarps));
    with_per_lane(D, [&](auto per) {
      softmax_warp_kernel<T, decltype(per)::value, kLog>
          <<<blocks, kThreads, 0, stream>>>(x, y, outer, static_cast<int>(D));
    });
  } else {
    softmax_block_kernel<T, kLog><<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(x, y, D);
  }
}

template <typename T, bool kLog>
void backward_typed(const T* y, const T* gy, T* gx, int64_t outer, int64_t D, int64_t inner,
                    cudaStream_t stream) {
  if (inner > 1) {
    const int64_t tiles = ceil_div(inner, kTileX);
    backward_cols_kernel<T, kLog>
        <<<static_cast<unsigned>(outer * tiles), dim3(kTileX, kTileY), 0, stream>>>(y, gy, gx, D,
                                                                                    inner, tiles);
  } else if (D <= kMaxRegisterRow) {
    const auto blocks = static_cast<unsigned>(ceil_div(outer, kRowWarps));
    with_per_lane(D, [&](auto per) {
      backward_warp_kernel<T, decltype(per)::value, kLog>
          <<<blocks, kThreads, 0, stream>>>(y, gy, gx, outer, static_cast<int>(D));
    });
  } else {
    backward_block_kernel<T, kLog>
        <<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(y, gy, gx, D);
  }
}

}  // namespace

cudaError_t launch_softmax(DType dtype, const void* x, void* y, int64_t outer, int64_t D,
                           int64_t inner, bool log, cudaStream_t stream) {
  if (outer * D * inner == 0) return cudaSuccess;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    if (log)
      forward_typed<T, true>(px, py, outer, D, inner, stream);
    else
      forward_typed<T, false>(px, py, outer, D, inner, stream);
  };
  if (dtype == DType::f64)
    run(TypeTag<double>{});
  else
    run(TypeTag<float>{});
  return cudaGetLastError();
}

cudaError_t launch_softmax_backward(DType dtype, const void* y, const void* gy, void* gx,
                                    int64_t outer, int64_t D, int64_t inner, bool log,
                                    cudaStream_t stream) {
  if (outer * D * inner == 0) return cudaSuccess;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* py = static_cast<const T*>(y);
    const T* pg = static_cast<const T*>(gy);
    T* po = static_cast<T*>(gx);
    if (log)
      backward_typed<T, true>(py, pg, po, outer, D, inner, stream);
    else
      backward_typed<T, false>(py, pg, po, outer, D, inner, stream);
  };
  if (dtype == DType::f64)
    run(TypeTag<double>{});
  else
    run(TypeTag<float>{});
  return cudaGetLastError();
}

}  // namespace relpos::cuda
