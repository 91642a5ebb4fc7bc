// cumsum kernels: a block per position scanning its line tile by tile with cub::BlockScan and a
// running carry, or (short lines, or many positions adjacent in memory) a thread per position
// summing sequentially. Floats accumulate in double and integers in int64, as on the CPU.
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_scan.cuh>

#include <type_traits>

#include "core/cuda/cumsum_kernels.h"
#include "core/cuda/elementwise.cuh"

namespace relpos::cuda {

namespace {

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Line addresses of a position: x element j at x[j * scan_x], out element j at out[j * scan_o].
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

// A thread per position, scanning its line in order: coalesced when neighbouring threads own
// neighbouring positions.
template <typename T>
__global__ void scan_lines_kernel(StridedArgs<2> pos, int64_t len, int64_t scan_x, int64_t scan_o,
                                  bool reverse) {
  using Acc = Accumulator<T>;
  const int64_t first = reverse ? len - 1 : 0, step = reverse ? -1 : 1;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < pos.n;
       p += int64_t{blockDim.x} * gridDim.x) {
    const Line<T> line = line_at<T>(pos, p);
    Acc acc = 0;
    int64_t j = first;
#pragma unroll 4
    for (int64_t t = 0; t < len; ++t, j += step) {
      acc += static_cast<Acc>(line.x[j * scan_x]);
      line.out[j * scan_o] = static_cast<T>(acc);
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
// (coalesced when scan_x is +-1), made blocked for cub::BlockScan, scanned with the carry of the
// earlier tiles, and stored back striped.
template <typename T, int kBlock, int kItems>
__global__ void __launch_bounds__(kBlock)
    scan_blocks_kernel(StridedArgs<2> pos, int64_t len, int64_t scan_x, int64_t scan_o,
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
        const int64_t j = reverse ? len - 1 - t : t;
        items[i] = t < len ? static_cast<Acc>(line.x[j * scan_x]) : Acc(0);
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
        const int64_t j = reverse ? len - 1 - t : t;
        if (t < len) line.out[j * scan_o] = static_cast<T>(items[i]);
      }
    }
  }
}

constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // positions per block beyond this loop

template <typename T, int kBlock, int kItems>
void launch_blocks(const StridedArgs<2>& pos, int64_t len, int64_t scan_x, int64_t scan_o,
                   bool reverse, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min(pos.n, kMaxBlocks));
  scan_blocks_kernel<T, kBlock, kItems>
      <<<blocks, kBlock, 0, stream>>>(pos, len, scan_x, scan_o, reverse);
}

}  // namespace

cudaError_t launch_cumsum(DType dtype, const StridedArgs<2>& positions, int64_t len, int64_t scan_x,
                          int64_t scan_o, bool reverse, cudaStream_t stream) {
  if (positions.n == 0 || len == 0) return cudaSuccess;
  // A thread per position pays off for short lines, and for lines whose positions are adjacent
  // in x (a scan over an outer dim) when there are enough of them to fill the GPU.
  constexpr int64_t kShortLine = 16, kManyPositions = 4096;
  const bool adjacent = positions.strides[1][positions.ndim - 1] == 1 && scan_x != 1;
  const bool per_thread = len <= kShortLine || (adjacent && positions.n >= kManyPositions);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (per_thread)
      scan_lines_kernel<T>
          <<<grid_for(positions.n), kThreads, 0, stream>>>(positions, len, scan_x, scan_o, reverse);
    else if (len <= 256)
      launch_blocks<T, 64, 4>(positions, len, scan_x, scan_o, reverse, stream);
    else
      launch_blocks<T, 256, 4>(positions, len, scan_x, scan_o, reverse, stream);
  });
  return cudaGetLastError();
}

}  // namespace relpos::cuda
