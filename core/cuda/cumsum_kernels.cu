// cumsum kernels, one line (the elements of a position along the scan dim) at a time: short lines
// a thread each; lines whose positions are adjacent in memory 32 to a block, cut into segments;
// other lines a block each, tile by tile with cub::BlockScan and a running carry. Floats
// accumulate in double and integers in int64, as on the CPU.
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_scan.cuh>

#include <type_traits>

#include "core/cuda/cumsum_kernels.h"
#include "core/cuda/elementwise.cuh"

namespace relpos::cuda {

namespace {

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// A position's line: element t of the scan (t = 0 first; from the end when reversed) is
// x[j * scan_x] and out[j * scan_o], j = t or len - 1 - t.
template <typename T>
struct Line {
  const T* x;
  T* out;
};

template <typename T>
__device__ __forceinline__ Line<T> line_at(const StridedArgs<2>& pos, int64_t p) {
  int64_t off[2];
  element_offsets(pos, p, off);
  return {static_cast<const T*>(pos.data[1]) + off[1], static_cast<T*>(pos.data[0]) + off[0]};
}

__device__ __forceinline__ int64_t element_of(int64_t t, int64_t len, bool reverse) {
  return reverse ? len - 1 - t : t;
}

constexpr int kShortLine = 16;  // lines up to this long: a thread each

// A thread per position: all loads first (they are independent), then the running sum.
template <typename T>
__global__ void scan_short_kernel(StridedArgs<2> pos, int64_t len, int64_t scan_x, int64_t scan_o,
                                  bool reverse) {
  using Acc = Accumulator<T>;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < pos.n;
       p += int64_t{blockDim.x} * gridDim.x) {
    const Line<T> line = line_at<T>(pos, p);
    Acc v[kShortLine];  // v: [kShortLine], the line in scan order
#pragma unroll
    for (int t = 0; t < kShortLine; ++t)
      v[t] = t < len ? static_cast<Acc>(line.x[element_of(t, len, reverse) * scan_x]) : Acc(0);
    Acc acc = 0;
#pragma unroll
    for (int t = 0; t < kShortLine; ++t) {
      acc += v[t];
      if (t < len) line.out[element_of(t, len, reverse) * scan_o] = static_cast<T>(acc);
    }
  }
}

// Blocks of kLanes positions x kSegments segments (lanes are neighbouring positions, so loads
// are coalesced when positions are adjacent in memory). A tile is kSegments * kSteps elements of
// the scan; segment s owns kSteps consecutive ones, scans them in registers, and adds the carry
// of the earlier tiles plus the totals of segments < s, shared through shared memory.
constexpr int kLanes = 32, kSegments = 8, kSteps = 8;

template <typename T>
__global__ void __launch_bounds__(kLanes* kSegments)
    scan_columns_kernel(StridedArgs<2> pos, int64_t len, int64_t scan_x, int64_t scan_o,
                        bool reverse) {
  using Acc = Accumulator<T>;
  __shared__ Acc segment_sums[kSegments][kLanes];  // segment_sums: [kSegments, kLanes]
  const int lane = threadIdx.x, segment = threadIdx.y;
  const int64_t groups = (pos.n + kLanes - 1) / kLanes;
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {  // uniform across the block
    const int64_t p = g * kLanes + lane;
    const bool active = p < pos.n;
    const Line<T> line = active ? line_at<T>(pos, p) : Line<T>{nullptr, nullptr};
    Acc carry = 0;  // sum of the earlier tiles of this lane's line
    for (int64_t t0 = 0; t0 < len; t0 += kSegments * kSteps) {
      const int64_t s0 = t0 + int64_t{segment} * kSteps;
      Acc v[kSteps];  // v: [kSteps], this segment's elements, then their running sums
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const int64_t t = s0 + u;
        v[u] = active && t < len ? static_cast<Acc>(line.x[element_of(t, len, reverse) * scan_x])
                                 : Acc(0);
      }
#pragma unroll
      for (int u = 1; u < kSteps; ++u) v[u] += v[u - 1];
      segment_sums[segment][lane] = v[kSteps - 1];
      __syncthreads();
      Acc before = carry;
#pragma unroll
      for (int s = 0; s < kSegments; ++s) {
        if (s == segment) before = carry;  // carry holds the segments < s so far
        carry += segment_sums[s][lane];
      }
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const int64_t t = s0 + u;
        if (active && t < len)
          line.out[element_of(t, len, reverse) * scan_o] = static_cast<T>(before + v[u]);
      }
      __syncthreads();  // segment_sums is rewritten by the next tile
    }
  }
}

// The block-wide prefix of each tile: the sum of every earlier tile of the line.
template <typename Acc>
struct RunningCarry {
  Acc total;
  __device__ Acc operator()(Acc tile_sum) {
    const Acc before = total;
    total += tile_sum;
    return before;
  }
};

// A block per position: tiles of kBlock * kItems elements in scan order are loaded striped
// (coalesced when scan_x is 1), made blocked for cub::BlockScan, scanned with the carry of the
// earlier tiles, and stored back striped.
template <typename T, int kBlock, int kItems>
__global__ void __launch_bounds__(kBlock)
    scan_rows_kernel(StridedArgs<2> pos, int64_t len, int64_t scan_x, int64_t scan_o,
                     bool reverse) {
  using Acc = Accumulator<T>;
  using Scan = cub::BlockScan<Acc, kBlock>;
  using Exchange = cub::BlockExchange<Acc, kBlock, kItems>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Exchange::TempStorage exchange;
  } shared;
  constexpr int64_t kTile = int64_t{kBlock} * kItems;
  for (int64_t p = blockIdx.x; p < pos.n; p += gridDim.x) {  // uniform across the block
    const Line<T> line = line_at<T>(pos, p);
    RunningCarry<Acc> carry{0};
    for (int64_t t0 = 0; t0 < len; t0 += kTile) {
      Acc items[kItems];  // items: [kItems], element t0 + i * kBlock + threadIdx.x (striped)
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int64_t t = t0 + int64_t{i} * kBlock + threadIdx.x;
        items[i] =
            t < len ? static_cast<Acc>(line.x[element_of(t, len, reverse) * scan_x]) : Acc(0);
      }
      __syncthreads();  // the previous tile is done with the shared storage
      Exchange(shared.exchange).StripedToBlocked(items, items);
      __syncthreads();
      Scan(shared.scan).InclusiveSum(items, items, carry);
      __syncthreads();
      Exchange(shared.exchange).BlockedToStriped(items, items);
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int64_t t = t0 + int64_t{i} * kBlock + threadIdx.x;
        if (t < len) line.out[element_of(t, len, reverse) * scan_o] = static_cast<T>(items[i]);
      }
    }
  }
}

constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // a grid's blocks loop over further positions

unsigned blocks_for(int64_t work_items) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(work_items, kMaxBlocks)));
}

}  // namespace

cudaError_t launch_cumsum(DType dtype, const StridedArgs<2>& positions, int64_t len, int64_t scan_x,
                          int64_t scan_o, bool reverse, cudaStream_t stream) {
  const int64_t n = positions.n;
  if (n == 0 || len == 0) return cudaSuccess;
  // Positions adjacent in x, scanned along another dim (a scan over an outer dim): enough of
  // them fill the GPU with coalesced column blocks; a few long lines go a block each instead.
  constexpr int64_t kManyColumns = 256;
  const bool adjacent = positions.strides[1][positions.ndim - 1] == 1 && scan_x != 1;
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (len <= kShortLine)
      scan_short_kernel<T>
          <<<grid_for(n), kThreads, 0, stream>>>(positions, len, scan_x, scan_o, reverse);
    else if (adjacent && n >= kManyColumns)
      scan_columns_kernel<T>
          <<<blocks_for((n + kLanes - 1) / kLanes), dim3(kLanes, kSegments), 0, stream>>>(
              positions, len, scan_x, scan_o, reverse);
    else if (len <= 256)
      scan_rows_kernel<T, 64, 4>
          <<<blocks_for(n), 64, 0, stream>>>(positions, len, scan_x, scan_o, reverse);
    else
      scan_rows_kernel<T, 256, 8>
          <<<blocks_for(n), 256, 0, stream>>>(positions, len, scan_x, scan_o, reverse);
  });
  return cudaGetLastError();
}

}  // namespace relpos::cuda
