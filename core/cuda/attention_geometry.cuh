// The geometry of the tiled attention kernels (attention_kernels.cuh): tile and thread sizes per
// storage, each thread's rows and columns of a tile (row_of, col_of, dim_of), which pairs and tiles
// a row may see, and the dropout keep factors; the shared-memory tiles and their products are
// attention_tiles.cuh's.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/bf16.h"
#include "core/cuda/attention_kernels.h"
#include "core/philox.h"

namespace relpos::cuda::attention_tiles {

constexpr int kTile = 64;                           // rows per block and columns per inner tile
constexpr int kThreads = 128;                       // 4 warps
constexpr int kWarpRows = kTile / (kThreads / 32);  // a warp owns 16 consecutive rows of a tile
constexpr int kMaxDim = 128;
constexpr int kMma = 16;  // the tensor cores' product: [kMma x kMma] times [kMma x 8]

// bf16 tiles go through the tensor cores, and their kernels compute in f32.
template <typename S>
constexpr bool kTensorCores = std::is_same_v<S, bf16>;
template <typename S>
using Compute = std::conditional_t<kTensorCores<S>, float, S>;

// Each thread's share of a tile (row_of, col_of, dim_of below): kLanes consecutive lanes share a
// row, each holding kRowsPer rows x kColsPer of a score tile's columns and kDim / kLanes of an
// output row. FMA tiles (f32, f64): groups of 8 lanes, 4 rows x 8 columns; tensor-core tiles
// (bf16): the instruction's quads of 4 lanes, 2 rows x 16 columns.
template <typename S>
constexpr int kLanes = kTensorCores<S> ? 4 : 8;
template <typename S>
constexpr int kRowsPer = kWarpRows / (32 / kLanes<S>);
template <typename S>
constexpr int kColsPer = kTile / kLanes<S>;
// A thread's columns come in runs of kRun neighbours: 4 (a vector load) or 2 (a fragment's pair).
template <typename S>
constexpr int kRun = kTensorCores<S> ? 2 : 4;

// Elements after each shared row: 4 (f32 and f64 rows stay 16-byte aligned for vector loads), 8
// for bf16 (rows 16-byte aligned, as ldmatrix's row addresses must be, and strides of 80 or 144
// bytes, which put the 8 rows of an 8 x 8 matrix in distinct banks).
template <typename S>
constexpr int kPad = kTensorCores<S> ? 8 : 4;
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

template <typename T>
__device__ __forceinline__ T neg_inf() {
  return -std::numeric_limits<T>::infinity();
}
__device__ __forceinline__ float exp2_of(float x) {
  return exp2f(x);
}
__device__ __forceinline__ double exp2_of(double x) {
  return exp2(x);
}

// Merge over the kLanes threads of a row group (consecutive lanes of one warp).
template <typename S, typename T, typename Merge>
__device__ __forceinline__ T group_reduce(T v, Merge merge) {
#pragma unroll
  for (int m = 1; m < kLanes<S>; m *= 2) v = merge(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

// The pair (query i, key j) passes the causal rule and its window (the key mask is checked
// separately, per key tile).
__device__ __forceinline__ bool causal_visible(const AttentionArgs& a, int64_t i, int64_t j) {
  if (!a.causal) return true;
  const int64_t ahead = j - i - (a.k_len - a.q_len);  // <= 0: the key is not in the future
  return ahead <= 0 && (a.window == 0 || ahead > -a.window);
}

// 1/(1 - p) when dropout keeps pair (bh, i, j), else 0.
__device__ __forceinline__ uint64_t pair_index(const AttentionArgs& a, int64_t bh, int64_t i,
                                               int64_t j) {
  return static_cast<uint64_t>((bh * a.q_len + i) * a.k_len + j);
}
template <typename T>
__device__ __forceinline__ T keep_of(const AttentionArgs& a, uint32_t word, uint64_t threshold) {
  return word >= threshold ? static_cast<T>(1.0 / (1.0 - a.dropout)) : T(0);
}
template <typename T>
__device__ __forceinline__ T keep_factor(const AttentionArgs& a, int64_t bh, int64_t i, int64_t j,
                                         uint64_t threshold) {
  const uint64_t pair = pair_index(a, bh, i, j);
  return keep_of<T>(a, philox::block_at(a.seed, a.offset + pair / 4).v[pair % 4], threshold);
}

// Dropout keeps a pair whose uniform number word / 2^32 is >= p: whose word is >= ceil(p 2^32).
inline uint64_t keep_threshold(double p) {
  return static_cast<uint64_t>(std::ceil(p * 4294967296.0));
}

__device__ __forceinline__ int64_t smaller(int64_t x, int64_t y) {
  return x < y ? x : y;
}
__device__ __forceinline__ int64_t larger(int64_t x, int64_t y) {
  return x > y ? x : y;
}

// Columns [first, end) of a tile start at index tile * kTile; the tile range covering them.
struct TileRange {
  int64_t first = 0, end = 0;  // in tiles
};
inline __device__ TileRange tiles_of(int64_t first, int64_t end) {
  if (end <= first) return {0, 0};
  return {first / kTile, (end + kTile - 1) / kTile};
}

// Keys that query rows [i0, i0 + kTile) may see.
inline __device__ TileRange key_tiles(const AttentionArgs& a, int64_t i0) {
  if (!a.causal) return tiles_of(0, a.k_len);
  const int64_t shift = a.k_len - a.q_len;
  const int64_t last_row = smaller(i0 + kTile, a.q_len) - 1;
  const int64_t first = a.window > 0 ? larger(int64_t{0}, i0 + shift - a.window + 1) : 0;
  return tiles_of(first, smaller(a.k_len, last_row + shift + 1));
}

// Queries that may see key rows [j0, j0 + kTile).
inline __device__ TileRange query_tiles(const AttentionArgs& a, int64_t j0) {
  if (!a.causal) return tiles_of(0, a.q_len);
  const int64_t shift = a.k_len - a.q_len;
  const int64_t last_key = smaller(j0 + kTile, a.k_len) - 1;
  const int64_t end = a.window > 0 ? smaller(a.q_len, last_key - shift + a.window) : a.q_len;
  return tiles_of(larger(int64_t{0}, j0 - shift), end);
}

// Thread (warp w, group g of the warp, lane l of the group) holds tile rows
// 16 w + g + (32 / kLanes) r: a warp owns 16 consecutive rows, the rows its tensor-core products
// form, and its groups read neighbouring rows (FMA tiles: a vector load of each row's next four
// values is free of bank conflicts; bf16: the fragments' rows g and g + 8).
template <typename S>
__device__ __forceinline__ int row_of(int r) {
  constexpr int kGroups = 32 / kLanes<S>;
  return kWarpRows * static_cast<int>(threadIdx.x / 32) +
         static_cast<int>(threadIdx.x % 32) / kLanes<S> + kGroups * r;
}
// ... and tile columns kRun kLanes (c / kRun) + kRun l + c % kRun: FMA tiles two runs of four (read
// as vectors), bf16 the fragments' pairs 8 n + 2 l, + 1 of each 8-column block n.
template <typename S>
__device__ __forceinline__ int col_of(int c) {
  const int lane = static_cast<int>(threadIdx.x % kLanes<S>);
  return kRun<S> * kLanes<S> * (c / kRun<S>)+kRun<S> * lane + c % kRun<S>;
}
// ... and head-size columns of its output rows: l + 8 e (FMA), the fragments' 8 (e / 2) + 2 l +
// e % 2 (bf16).
template <typename S>
__device__ __forceinline__ int dim_of(int e) {
  const int lane = static_cast<int>(threadIdx.x % kLanes<S>);
  if constexpr (kTensorCores<S>)
    return 8 * (e / 2) + 2 * lane + e % 2;
  else
    return lane + kLanes<S> * e;
}

// keep[x] = the keep factor of pair (bh, i, j + x) for a run of kRun neighbouring keys (1 without
// dropout, or past Lq): one Philox block per four pairs, where keep_factor draws a block per pair
// (a run of at most four crosses at most one block's end).
template <typename S>
__device__ __forceinline__ void keep_run(const AttentionArgs& a, int64_t bh, int64_t i, int64_t j,
                                         uint64_t threshold, Compute<S> (&keep)[kRun<S>]) {
  static_assert(kRun<S> <= 4, "a run crosses at most one Philox block's end");
  if (a.dropout == 0 || i >= a.q_len) {
#pragma unroll
    for (int x = 0; x < kRun<S>; ++x) keep[x] = 1;
    return;
  }
  const uint64_t first = pair_index(a, bh, i, j);
  philox::Block b = philox::block_at(a.seed, a.offset + first / 4);
#pragma unroll
  for (int x = 0; x < kRun<S>; ++x) {
    const uint64_t pair = first + x;
    if (x > 0 && pair % 4 == 0) b = philox::block_at(a.seed, a.offset + pair / 4);
    keep[x] = keep_of<Compute<S>>(a, b.v[pair % 4], threshold);
  }
}

}  // namespace relpos::cuda::attention_tiles
