// Reduction kernels over x: [O, R, I] contiguous, reduced over R. A policy (sum, max, shifted sum
// of exp, argmax) says how a value enters an accumulator, how two merge and how one becomes the
// output; the row kernels (I == 1) and the column-tile kernel (I > 1) are generic over it. As on
// the CPU, float sums accumulate in double and integer sums in int64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/cuda/elementwise.cuh"
#include "core/cuda/reduce_kernels.h"
#include "core/cuda/reduce_policies.cuh"
#include "core/cuda/warp_reduce.cuh"

namespace relpos::cuda {

namespace {

using namespace reduction;

constexpr int kRowThreads = 256;  // threads of a row block (and of a block of row warps)
constexpr int kRowWarps = kRowThreads / kWarpSize;
constexpr int64_t kWarpRowMax = 1024;   // chunks up to this long get a warp, longer ones a block
constexpr int64_t kRowChunk = 8192;     // chunk length when a few long rows are split
constexpr int64_t kFewRows = 512;       // fewer row outputs than this may be split
constexpr int kTileX = 32, kTileY = 8;  // column tile: 32 columns x 8 row lanes
constexpr int64_t kFewTiles = 256;      // fewer (o, tile) blocks than this may be split
constexpr int64_t kMaxAccBytes = 16;    // the largest accumulator (the argmax pair)

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

template <typename P>
struct MergeOf {
  __device__ typename P::A operator()(typename P::A a, typename P::A b) const {
    return P::merge(a, b);
  }
};

// A stage reads x (kFirst) or the partial accumulators of a first stage, and writes the outputs
// (kLast) or partial accumulators.
template <typename P, bool kFirst>
using StageIn = std::conditional_t<kFirst, typename P::In, typename P::A>;

template <typename P, bool kFirst>
__device__ __forceinline__ typename P::A load_at(const StageIn<P, kFirst>* in, int64_t idx,
                                                 typename P::In shift, int64_t r) {
  if constexpr (kFirst)
    return P::load(in[idx], shift, r);
  else
    return in[idx];
}

template <typename P, bool kLast>
__device__ __forceinline__ void store_at(void* out, int64_t idx, typename P::A a,
                                         typename P::In shift) {
  if constexpr (kLast)
    static_cast<typename P::Out*>(out)[idx] = P::finalize(a, shift);
  else
    static_cast<typename P::A*>(out)[idx] = a;
}

// The shift of output `o` (read from the max pass's output), or 0 for unshifted policies.
template <typename P>
__device__ __forceinline__ typename P::In shift_at(const typename P::In* shift, int64_t o) {
  using T = typename P::In;
  if constexpr (P::kShift) {
    const T m = shift[o];
    return std::isfinite(m) ? m : T(0);
  } else {
    return T(0);
  }
}

// in: [O, R]. Task t = (o, s) merges chunk s of row o, columns [s * chunk, (s + 1) * chunk) cut
// at R, into out[t] (out: [O, S], the outputs themselves when S == 1). One warp per task.
template <typename P, bool kFirst, bool kLast>
__global__ void rows_warp_kernel(const StageIn<P, kFirst>* in, void* out,
                                 const typename P::In* shift, int64_t tasks, int64_t R, int64_t S,
                                 int64_t chunk) {
  const int64_t t = blockIdx.x * int64_t{kRowWarps} + threadIdx.x / kWarpSize;
  if (t >= tasks) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const int64_t o = t / S, c0 = (t % S) * chunk, c1 = std::min(R, c0 + chunk);
  const typename P::In sh = shift_at<P>(shift, o);
  const StageIn<P, kFirst>* row = in + o * R;  // row: [R]
  typename P::A acc = P::identity();
  for (int64_t c = c0 + lane; c < c1; c += kWarpSize)
    acc = P::merge(acc, load_at<P, kFirst>(row, c, sh, c));
  acc = warp_all_reduce(acc, MergeOf<P>{});
  if (lane == 0) store_at<P, kLast>(out, t, acc, sh);
}

// The same with one block per task, for long chunks.
template <typename P, bool kFirst, bool kLast>
__global__ void rows_block_kernel(const StageIn<P, kFirst>* in, void* out,
                                  const typename P::In* shift, int64_t R, int64_t S,
                                  int64_t chunk) {
  const int64_t t = blockIdx.x;
  const int64_t o = t / S, c0 = (t % S) * chunk, c1 = std::min(R, c0 + chunk);
  const typename P::In sh = shift_at<P>(shift, o);
  const StageIn<P, kFirst>* row = in + o * R;  // row: [R]
  typename P::A acc = P::identity();
  for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x)
    acc = P::merge(acc, load_at<P, kFirst>(row, c, sh, c));
  acc = block_all_reduce(acc, MergeOf<P>{});
  if (threadIdx.x == 0) store_at<P, kLast>(out, t, acc, sh);
}

// in: [O, R, I]. Block (kTileX, kTileY) per (o, tile of 32 columns) and chunk s = blockIdx.y:
// lane (x, y) merges rows r0 + y, r0 + y + kTileY, ... of column i, then the kTileY lanes of a
// column merge in order y = 0, 1, ... Writes out[(o * S + s) * I + i] (out: [O, S, I], the
// outputs [O, I] when S == 1). Consecutive x read consecutive columns: coalesced.
template <typename P, bool kFirst, bool kLast>
__global__ void cols_kernel(const StageIn<P, kFirst>* in, void* out, const typename P::In* shift,
                            int64_t R, int64_t I, int64_t tiles, int64_t chunk) {
  using A = typename P::A;
  __shared__ A lanes[kTileY][kTileX];  // lanes: [kTileY, kTileX] per-lane accumulators
  const int64_t o = blockIdx.x / tiles;
  const int64_t i = (blockIdx.x % tiles) * kTileX + threadIdx.x;
  const int64_t s = blockIdx.y, S = gridDim.y;
  const int64_t r0 = s * chunk, r1 = std::min(R, r0 + chunk);
  const bool active = i < I;
  const typename P::In sh = active ? shift_at<P>(shift, o * I + i) : typename P::In(0);
  A acc = P::identity();
  if (active)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kTileY)
      acc = P::merge(acc, load_at<P, kFirst>(in, (o * R + r) * I + i, sh, r));
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && active) {
    for (int y = 1; y < kTileY; ++y) acc = P::merge(acc, lanes[y][threadIdx.x]);
    store_at<P, kLast>(out, (o * S + s) * I + i, acc, sh);
  }
}

template <typename P, bool kFirst, bool kLast>
void launch_rows(const StageIn<P, kFirst>* in, void* out, const typename P::In* shift, int64_t O,
                 int64_t R, int64_t S, int64_t chunk, cudaStream_t stream) {
  const int64_t tasks = O * S;
  if (chunk <= kWarpRowMax) {
    const auto blocks = static_cast<unsigned>(ceil_div(tasks, kRowWarps));
    rows_warp_kernel<P, kFirst, kLast>
        <<<blocks, kRowThreads, 0, stream>>>(in, out, shift, tasks, R, S, chunk);
  } else {
    rows_block_kernel<P, kFirst, kLast>
        <<<static_cast<unsigned>(tasks), kRowThreads, 0, stream>>>(in, out, shift, R, S, chunk);
  }
}

template <typename P, bool kFirst, bool kLast>
void launch_cols(const StageIn<P, kFirst>* in, void* out, const typename P::In* shift, int64_t O,
                 int64_t R, int64_t I, int64_t S, int64_t chunk, cudaStream_t stream) {
  const int64_t tiles = ceil_div(I, kTileX);
  const dim3 grid(static_cast<unsigned>(O * tiles), static_cast<unsigned>(S));
  cols_kernel<P, kFirst, kLast>
      <<<grid, dim3(kTileX, kTileY), 0, stream>>>(in, out, shift, R, I, tiles, chunk);
}

// Runs the plan: one stage, or a split stage into scratch and a merge stage over the splits.
template <typename P>
cudaError_t run_plan(const ReducePlan& p, const typename P::In* x, void* out, void* scratch,
                     const typename P::In* shift, cudaStream_t stream) {
  using A = typename P::A;
  A* part = static_cast<A*>(scratch);  // part: [O, splits] or [O, splits, I]
  if (p.I == 1 && p.splits == 1) {
    launch_rows<P, true, true>(x, out, shift, p.O, p.R, 1, p.R, stream);
  } else if (p.I == 1) {
    launch_rows<P, true, false>(x, part, shift, p.O, p.R, p.splits, p.chunk, stream);
    launch_rows<P, false, true>(part, out, shift, p.O, p.splits, 1, p.splits, stream);
  } else if (p.splits == 1) {
    launch_cols<P, true, true>(x, out, shift, p.O, p.R, p.I, 1, p.R, stream);
  } else {
    launch_cols<P, true, false>(x, part, shift, p.O, p.R, p.I, p.splits, p.chunk, stream);
    launch_cols<P, false, true>(part, out, shift, p.O, p.splits, p.I, 1, p.splits, stream);
  }
  return cudaGetLastError();  // the first launch error, if any, is still the last one recorded
}

template <typename T>
__global__ void find_nonfinite_kernel(const T* x, int64_t n, int* flag) {
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    bad = bad || !std::isfinite(x[i]);
  // Every block that saw one writes the same 1: no read-modify-write, so no race on the value.
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1;
}

}  // namespace

ReducePlan plan_reduce(int64_t O, int64_t R, int64_t I) {
  ReducePlan p;
  p.O = O;
  p.R = R;
  p.I = I;
  p.chunk = R;
  // Splits depend on the shape only, so results are the same on every GPU.
  int64_t want = 1;
  if (I == 1) {
    if (O < kFewRows && R > 2 * kRowChunk)
      want = std::min(ceil_div(R, kRowChunk), ceil_div(2048, O));
  } else {
    const int64_t blocks = O * ceil_div(I, kTileX);
    if (blocks < kFewTiles && R >= 512) want = std::min(ceil_div(R, 256), ceil_div(512, blocks));
  }
  if (want > 1) {
    p.chunk = ceil_div(R, want);
    p.splits = ceil_div(R, p.chunk);  // no empty chunk
  }
  if (p.splits > 1) p.scratch_bytes = O * p.splits * I * kMaxAccBytes;
  return p;
}

cudaError_t launch_reduce(ReduceOp op, DType dtype, const ReducePlan& plan, const void* x,
                          void* out, void* scratch, cudaStream_t stream) {
  if (plan.O * plan.R * plan.I == 0) return cudaSuccess;  // the host fills empty reductions
  return visit_dtype(dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x);
    if (op == ReduceOp::sum) return run_plan<SumP<T>>(plan, px, out, scratch, nullptr, stream);
    if (op == ReduceOp::max) return run_plan<MaxP<T>>(plan, px, out, scratch, nullptr, stream);
    if constexpr (std::is_floating_point_v<T>) {  // logsumexp: the max, then the shifted sum
      const cudaError_t err = run_plan<MaxP<T>>(plan, px, out, scratch, nullptr, stream);
      if (err != cudaSuccess) return err;
      return run_plan<SumExpP<T>>(plan, px, out, scratch, static_cast<const T*>(out), stream);
    } else {
      return cudaErrorInvalidValue;  // rejected by the entry point before reaching here
    }
  });
}

cudaError_t launch_argmax(DType dtype, const ReducePlan& plan, const void* x, int64_t* out,
                          void* scratch, cudaStream_t stream) {
  if (plan.O * plan.R * plan.I == 0) return cudaSuccess;
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return run_plan<ArgMaxP<T>>(plan, static_cast<const T*>(x), out, scratch, nullptr, stream);
  });
}

cudaError_t launch_find_nonfinite(DType dtype, const void* x, int64_t n, int* flag,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (dtype == DType::f64)
    find_nonfinite_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const double*>(x), n,
                                                                flag);
  else
    find_nonfinite_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const float*>(x), n,
                                                                flag);
  return cudaGetLastError();
}

}  // namespace relpos::cuda
