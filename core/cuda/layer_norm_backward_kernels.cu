// Layer norm backward over the last dim, as core/cpu/layer_norm.cpp: row sums in f64, dx in T.
// dx is fused with the dweight/dbias partial sums (f64) of each block's rows; a second pass sums
// the blocks' partial rows in a fixed order: deterministic, no atomics. Rows up to 512 long get
// one warp each (values and sums in registers), longer rows one block.
#include <algorithm>
#include <cstdint>

#include "core/cuda/layer_norm_kernels.h"
#include "core/cuda/warp_reduce.cuh"

namespace relpos::cuda {

namespace {

constexpr int kThreads = 256;  // per block in the row kernels
constexpr int kRowWarps = kThreads / kWarpSize;
constexpr int kMaxBackwardPerLane = 16;  // registers and shared memory of the warp kernel
constexpr int64_t kMaxBackwardWarpRow = kWarpSize * kMaxBackwardPerLane;  // longer: block kernel
constexpr int64_t kMaxParts = 512;  // row blocks holding partial dweight/dbias sums

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Row sums of g = gy * w and of g * xhat, in f64.
struct SumPair {
  double g, gx;
};
struct AddPair {
  __device__ SumPair operator()(SumPair a, SumPair b) const { return {a.g + b.g, a.gx + b.gx}; }
};

// With g = gy * w and xhat = (x - mean) * rstd: dx = rstd * (g - mean(g) - xhat * mean(g xhat)).
template <typename T>
__device__ __forceinline__ T dx_of(T g, T xv, T mu, T rs, T a, T c) {
  return rs * (g - a - (xv - mu) * rs * c);
}

// part: [parts, D]; this block's row = its warps' per-lane sums acc, added in warp order.
template <int kPer>
__device__ void write_block_part(const double (&acc)[kPer], double* part, int D,
                                 double (&stage)[kRowWarps][kPer * kWarpSize]) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  __syncthreads();  // stage may still be read for the previous gradient
#pragma unroll
  for (int k = 0; k < kPer; ++k) stage[warp][k * kWarpSize + lane] = acc[k];
  __syncthreads();
  for (int c = threadIdx.x; c < D; c += blockDim.x) {
    double s = stage[0][c];
    for (int w = 1; w < kRowWarps; ++w) s += stage[w][c];
    part[blockIdx.x * int64_t{D} + c] = s;
  }
}

// gy, x, dx: [R, D] (D <= 32 * kPer). Block p takes rows [p R / parts, (p + 1) R / parts), split
// evenly over its warps; each lane keeps its columns' weight and dweight/dbias sums in registers.
template <typename T, int kPer>
__global__ void backward_warp_kernel(const T* gy, const T* x, const T* mean, const T* rstd,
                                     const T* w, T* dx, double* part_w, double* part_b, int64_t R,
                                     int D, int64_t parts) {
  __shared__ double stage[kRowWarps][kPer * kWarpSize];  // stage: [warps, 32 kPer]
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t b0 = blockIdx.x * R / parts, n = (blockIdx.x + 1) * R / parts - b0;
  const int64_t r0 = b0 + warp * n / kRowWarps, r1 = b0 + (warp + 1) * n / kRowWarps;
  T wv[kPer];
  double dw[kPer], db[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = k * kWarpSize + lane;
    wv[k] = w != nullptr && c < D ? w[c] : T(1);  // g = gy when there is no weight
    dw[k] = db[k] = 0;
  }
  for (int64_t r = r0; r < r1; ++r) {  // no early exit: every warp reaches the block syncs
    const T mu = mean[r], rs = rstd[r];
    const T* xr = x + r * D;  // xr, gr: [D]
    const T* gr = gy + r * D;
    T xv[kPer], gv[kPer];
    SumPair s{0, 0};
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int c = k * kWarpSize + lane;
      xv[k] = c < D ? xr[c] : T(0);
      gv[k] = c < D ? gr[c] : T(0);
      const T g = gv[k] * wv[k];
      if (c < D) {
        s.g += g;
        s.gx += g * ((xv[k] - mu) * rs);
      }
    }
    s = warp_all_reduce(s, AddPair{});
    const T a = static_cast<T>(s.g / D), c_mean = static_cast<T>(s.gx / D);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int c = k * kWarpSize + lane;
      if (c >= D) continue;
      dx[r * D + c] = dx_of(gv[k] * wv[k], xv[k], mu, rs, a, c_mean);
      dw[k] += gv[k] * ((xv[k] - mu) * rs);
      db[k] += gv[k];
    }
  }
  if (part_w != nullptr) write_block_part<kPer>(dw, part_w, D, stage);
  if (part_b != nullptr) write_block_part<kPer>(db, part_b, D, stage);
}

// The same for long rows: one block walks its rows; thread t owns columns t, t + blockDim, ...
// of this block's partial rows, so it accumulates there without races.
template <typename T>
__global__ void backward_block_kernel(const T* gy, const T* x, const T* mean, const T* rstd,
                                      const T* w, T* dx, double* part_w, double* part_b, int64_t R,
                                      int64_t D, int64_t parts) {
  const int64_t r0 = blockIdx.x * R / parts, r1 = (blockIdx.x + 1) * R / parts;
  double* pw = part_w != nullptr ? part_w + blockIdx.x * D : nullptr;  // pw, pb: [D]
  double* pb = part_b != nullptr ? part_b + blockIdx.x * D : nullptr;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) {
    if (pw != nullptr) pw[c] = 0;
    if (pb != nullptr) pb[c] = 0;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const T mu = mean[r], rs = rstd[r];
    const T* xr = x + r * D;  // xr, gr, dxr: [D]
    const T* gr = gy + r * D;
    T* dxr = dx + r * D;
    SumPair s{0, 0};
    for (int64_t c = threadIdx.x; c < D; c += blockDim.x) {
      const T g = w != nullptr ? gr[c] * w[c] : gr[c];
      s.g += g;
      s.gx += g * ((xr[c] - mu) * rs);
    }
    s = block_all_reduce(s, AddPair{});
    const T a = static_cast<T>(s.g / static_cast<double>(D));
    const T c_mean = static_cast<T>(s.gx / static_cast<double>(D));
    for (int64_t c = threadIdx.x; c < D; c += blockDim.x) {
      const T g = w != nullptr ? gr[c] * w[c] : gr[c];
      dxr[c] = dx_of(g, xr[c], mu, rs, a, c_mean);
      if (pw != nullptr) pw[c] += gr[c] * ((xr[c] - mu) * rs);
      if (pb != nullptr) pb[c] += gr[c];
    }
  }
}

// part: [parts, D] f64 -> out: [D], summed over parts in a fixed order. Block (32, 32): 32
// columns, 32 lanes over parts, then the lanes of a column in lane order.
template <typename T>
__global__ void sum_parts_kernel(const double* part, T* out, int64_t parts, int64_t D) {
  __shared__ double lanes[32][33];  // padded against bank conflicts
  const int64_t c = blockIdx.x * int64_t{32} + threadIdx.x;
  double s = 0;
  if (c < D)
    for (int64_t p = threadIdx.y; p < parts; p += 32) s += part[p * D + c];
  lanes[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || c >= D) return;
  for (int y = 1; y < 32; ++y) s += lanes[y][threadIdx.x];
  out[c] = static_cast<T>(s);
}

template <typename T>
void backward_typed(const T* gy, const T* x, const T* mean, const T* rstd, const T* w, T* dx,
                    T* dweight, T* dbias, double* part_w, double* part_b, int64_t R, int64_t D,
                    cudaStream_t stream) {
  const int64_t parts = layer_norm_backward_parts(R, D);
  if (D <= kMaxBackwardWarpRow) {
    with_per_lane<kMaxBackwardPerLane>(D, [&](auto per) {
      backward_warp_kernel<T, decltype(per)::value>
          <<<static_cast<unsigned>(parts), kThreads, 0, stream>>>(
              gy, x, mean, rstd, w, dx, part_w, part_b, R, static_cast<int>(D), parts);
    });
  } else {
    backward_block_kernel<T><<<static_cast<unsigned>(parts), kThreads, 0, stream>>>(
        gy, x, mean, rstd, w, dx, part_w, part_b, R, D, parts);
  }
  const auto col_blocks = static_cast<unsigned>(ceil_div(D, 32));
  if (dweight != nullptr)
    sum_parts_kernel<T><<<col_blocks, dim3(32, 32), 0, stream>>>(part_w, dweight, parts, D);
  if (dbias != nullptr)
    sum_parts_kernel<T><<<col_blocks, dim3(32, 32), 0, stream>>>(part_b, dbias, parts, D);
}

}  // namespace

int64_t layer_norm_backward_parts(int64_t R, int64_t D) {
  // Warp kernel: about a row per warp at least; block kernel: at least a row per block.
  return D <= kMaxBackwardWarpRow ? std::min(ceil_div(R, kRowWarps), kMaxParts)
                                  : std::min(R, kMaxParts);
}

cudaError_t launch_layer_norm_backward(DType dtype, const void* gy, const void* x, const void* mean,
                                       const void* rstd, const void* weight, void* dx,
                                       void* dweight, void* dbias, double* part_w, double* part_b,
                                       int64_t R, int64_t D, cudaStream_t stream) {
  if (R * D == 0) return cudaSuccess;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    backward_typed<T>(static_cast<const T*>(gy), static_cast<const T*>(x),
                      static_cast<const T*>(mean), static_cast<const T*>(rstd),
                      static_cast<const T*>(weight), static_cast<T*>(dx), static_cast<T*>(dweight),
                      static_cast<T*>(dbias), part_w, part_b, R, D, stream);
  };
  if (dtype == DType::f64)
    run(TypeTag<double>{});
  else
    run(TypeTag<float>{});
  return cudaGetLastError();
}

}  // namespace relpos::cuda
