// The machinery of the tiled attention kernels (attention_kernels.cuh): the tile and thread
// geometry, which pairs and tiles a row may see, the dropout keep test, and each thread's share of
// the shared-memory tiles (row_of, col_of, dim_of) with their vector loads, products and stores;
// and the band of position-table rows a tile reads, with the products that use it.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda/attention_kernels.h"
#include "core/philox.h"

namespace relpos::cuda::attention_tiles {

constexpr int kTile = 64;                            // rows per block and columns per inner tile
constexpr int kLanes = 8;                            // threads sharing a row group
constexpr int kRowsPer = 4;                          // rows per thread
constexpr int kColsPer = kTile / kLanes;             // tile columns per thread
constexpr int kThreads = kTile / kRowsPer * kLanes;  // 128
constexpr int kMaxDim = 128;
constexpr int kPad = 4;  // elements after each shared row
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
template <typename T, typename Merge>
__device__ __forceinline__ T group_reduce(T v, Merge merge) {
#pragma unroll
  for (int m = 1; m < kLanes; m *= 2) v = merge(v, __shfl_xor_sync(0xffffffffu, v, m));
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
template <typename T>
__device__ __forceinline__ T keep_factor(const AttentionArgs& a, int64_t bh, int64_t i, int64_t j,
                                         uint64_t threshold) {
  const uint64_t pair = static_cast<uint64_t>((bh * a.q_len + i) * a.k_len + j);
  const philox::Block b = philox::block_at(a.seed, a.offset + pair / 4);
  const uint32_t word = b.v[pair % 4];
  return word >= threshold ? static_cast<T>(1.0 / (1.0 - a.dropout)) : T(0);
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

// Thread (group g, lane l) holds tile rows g + 16 r (r < 4): the four groups of a warp read
// neighbouring rows, so a vector load of each row's next four values is free of bank conflicts.
__device__ __forceinline__ int row_of(int r) {
  return threadIdx.x / kLanes + kTile / kRowsPer * r;
}
// ... and tile columns 32 (c / 4) + 4 l + c % 4 (c < 8): two runs of four, read as vectors.
__device__ __forceinline__ int col_of(int c) {
  return 32 * (c / 4) + 4 * (threadIdx.x % kLanes) + c % 4;
}
// ... and head-size columns l + 8 e of its output rows.
__device__ __forceinline__ int dim_of(int e) {
  return threadIdx.x % kLanes + kLanes * e;
}

// Four consecutive values of shared memory, 16-byte aligned, in vector loads and stores.
__device__ __forceinline__ void load4(const float* p, float (&x)[4]) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
}
__device__ __forceinline__ void load4(const double* p, double (&x)[4]) {
  const double2 a = *reinterpret_cast<const double2*>(p),
                b = *reinterpret_cast<const double2*>(p + 2);
  x[0] = a.x, x[1] = a.y, x[2] = b.x, x[3] = b.y;
}
__device__ __forceinline__ void store4(float* p, float x0, float x1, float x2, float x3) {
  *reinterpret_cast<float4*>(p) = make_float4(x0, x1, x2, x3);
}
__device__ __forceinline__ void store4(double* p, double x0, double x1, double x2, double x3) {
  *reinterpret_cast<double2*>(p) = make_double2(x0, x1);
  *reinterpret_cast<double2*>(p + 2) = make_double2(x2, x3);
}

// Shared tiles: rows [kTile][kDim + kPad] (a row per query or key) and columns
// [kDim][kTile + kPad] (transposed); the padding keeps rows 16-byte aligned.
template <typename T, int kDim>
using RowTile = T[kTile][kDim + kPad];
template <typename T, int kDim>
using ColTile = T[kDim][kTile + kPad];
template <typename T>
using ScoreTile = T[kTile][kTile + kPad];

// rows[r][d] = x[row0 + r][d] * factor; zero past `len` rows or `dim`.
template <typename T, int kDim>
__device__ void load_rows(RowTile<T, kDim>& rows, const T* x, int64_t row0, int64_t len, int dim,
                          T factor) {
  for (int e = threadIdx.x; e < kTile * kDim; e += kThreads) {
    const int r = e / kDim, d = e % kDim;
    const int64_t row = row0 + r;
    rows[r][d] = row < len && d < dim ? x[row * dim + d] * factor : T(0);
  }
}

// cols[d][c] = x[col0 + c][d]; zero past `len` or `dim`.
template <typename T, int kDim>
__device__ void load_cols(ColTile<T, kDim>& cols, const T* x, int64_t col0, int64_t len, int dim) {
  for (int e = threadIdx.x; e < kTile * kDim; e += kThreads) {
    const int c = e / kDim, d = e % kDim;
    const int64_t col = col0 + c;
    cols[d][c] = col < len && d < dim ? x[col * dim + d] : T(0);
  }
}

// acc[r][c] = Σ_d rows[row_of(r)][d] cols[d][col_of(c)]: this thread's part of rows · colsᵀ.
template <typename T, int kDim>
__device__ __forceinline__ void tile_product(const RowTile<T, kDim>& rows,
                                             const ColTile<T, kDim>& cols,
                                             T (&acc)[kRowsPer][kColsPer]) {
  const int lane = threadIdx.x % kLanes;
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
    for (int c = 0; c < kColsPer; ++c) acc[r][c] = 0;
#pragma unroll 2
  for (int d0 = 0; d0 < kDim; d0 += 4) {
    T x[kRowsPer][4];
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) load4(&rows[row_of(r)][d0], x[r]);
#pragma unroll
    for (int dd = 0; dd < 4; ++dd) {
      T y[2][4];
      load4(&cols[d0 + dd][4 * lane], y[0]);
      load4(&cols[d0 + dd][32 + 4 * lane], y[1]);
#pragma unroll
      for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
        for (int c = 0; c < kColsPer; ++c) acc[r][c] = fma(x[r][dd], y[c / 4][c % 4], acc[r][c]);
    }
  }
}

// acc[r][e] += Σ_c weights[row_of(r)][c] values[dim_of(e)][c] over the tile's kTile columns.
template <typename T, int kDim>
__device__ __forceinline__ void accumulate_rows(const ScoreTile<T>& weights,
                                                const ColTile<T, kDim>& values,
                                                T (&acc)[kRowsPer][kDim / kLanes]) {
#pragma unroll 2
  for (int c0 = 0; c0 < kTile; c0 += 4) {
    T w[kRowsPer][4];
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) load4(&weights[row_of(r)][c0], w[r]);
#pragma unroll
    for (int e = 0; e < kDim / kLanes; ++e) {
      T x[4];
      load4(&values[dim_of(e)][c0], x);
#pragma unroll
      for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
        for (int cc = 0; cc < 4; ++cc) acc[r][e] = fma(w[r][cc], x[cc], acc[r][e]);
    }
  }
}

// weights[row_of(r)][col_of(c)] = w[r][c], as vector stores.
template <typename T>
__device__ __forceinline__ void store_scores(ScoreTile<T>& weights,
                                             const T (&w)[kRowsPer][kColsPer]) {
  const int lane = threadIdx.x % kLanes;
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      store4(&weights[row_of(r)][32 * h + 4 * lane], w[r][4 * h], w[r][4 * h + 1], w[r][4 * h + 2],
             w[r][4 * h + 3]);
}

// Writes acc (rows row_of(r), columns dim_of(e)) times `factor` to x [len, dim] from row0,
// skipping rows past len and columns past dim.
template <typename T, int kDim>
__device__ void store_rows(const T (&acc)[kRowsPer][kDim / kLanes], T* x, int64_t row0, int64_t len,
                           int dim, T factor) {
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const int64_t row = row0 + row_of(r);
    if (row >= len) continue;
#pragma unroll
    for (int e = 0; e < kDim / kLanes; ++e)
      if (dim_of(e) < dim) x[row * dim + dim_of(e)] = acc[r][e] * factor;
  }
}

// ---------------------------------------------------------------- the position term
// Pair (query i, key j) reads table row rel_row(δ), δ = i + rel_offset - j (core/ops.h
// AttentionSpec::rel_key). The pairs of query rows [i0, i0 + kTile) x keys [j0, j0 + kTile) read
// the 2 kTile - 1 distances from band_start(i0, j0): pair (i0 + x, j0 + y) reads band row
// g = x - y + kTile - 1. A tile's term is one dense product G = rq·bandᵀ [kTile, 2 kTile] in two
// halves of kTile columns, from which each pair picks its column (the rel-shift as index
// arithmetic); its gradients are products with dG, the pairs' dS placed at their columns.

// The band's table rows, transposed as the keys are: band[h][d][x] holds band row h kTile + x
// (row 2 kTile - 1 stays zero).
template <typename T, int kDim>
using BandTiles = ColTile<T, kDim>[2];

__device__ __forceinline__ int64_t rel_row(const AttentionArgs& a, int64_t delta) {
  return smaller(larger(delta, a.rel_min), a.rel_max) - a.rel_min;
}
__device__ __forceinline__ int64_t band_start(const AttentionArgs& a, int64_t i0, int64_t j0) {
  return i0 + a.rel_offset - j0 - (kTile - 1);
}
// Head bh's table, [rel_max - rel_min + 1, R].
template <typename T>
__device__ const T* table_of(const AttentionArgs& a, int64_t bh) {
  const int64_t rows = a.rel_max - a.rel_min + 1;
  return static_cast<const T*>(a.rel_key) + (a.rel_one_table ? 0 : bh % a.heads) * rows * a.rel_dim;
}

// Band row g = table[rel_row(delta0 + g)] * factor; zero in the last row and past R.
template <typename T, int kDim>
__device__ void load_band(BandTiles<T, kDim>& band, const AttentionArgs& a, const T* table,
                          int64_t delta0, T factor) {
  for (int e = threadIdx.x; e < 2 * kTile * kDim; e += kThreads) {
    const int g = e / kDim, d = e % kDim;
    band[g / kTile][d][g % kTile] = g < 2 * kTile - 1 && d < a.rel_dim
                                        ? table[rel_row(a, delta0 + g) * a.rel_dim + d] * factor
                                        : T(0);
  }
}

// low, high = the two halves of G = rq·bandᵀ: G[x][g] = rq[x]·(band row g).
template <typename T, int kDim>
__device__ __forceinline__ void band_scores(const RowTile<T, kDim>& rq,
                                            const BandTiles<T, kDim>& band, ScoreTile<T>& low,
                                            ScoreTile<T>& high) {
  T g[kRowsPer][kColsPer];
  tile_product<T, kDim>(rq, band[0], g);
  store_scores(low, g);
  tile_product<T, kDim>(rq, band[1], g);
  store_scores(high, g);
}

// acc[r][c] += G[query][query - key + kTile - 1] over this thread's pairs of the tile, whose rows
// are queries and columns keys (kQueryRows) or the other way round.
template <bool kQueryRows, typename T>
__device__ __forceinline__ void add_band_scores(const ScoreTile<T>& low, const ScoreTile<T>& high,
                                                T (&acc)[kRowsPer][kColsPer]) {
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
    for (int c = 0; c < kColsPer; ++c) {
      const int query = kQueryRows ? row_of(r) : col_of(c);
      const int g = query - (kQueryRows ? col_of(c) : row_of(r)) + kTile - 1;
      acc[r][c] += g < kTile ? low[query][g] : high[query][g - kTile];
    }
}

// dG from dS [query][key]: low, high = dG's halves, dG[x][g] = dS[x][x - g + kTile - 1] where that
// key is in the tile, else 0.
template <typename T>
__device__ void band_grads(const ScoreTile<T>& ds, ScoreTile<T>& low, ScoreTile<T>& high) {
  for (int e = threadIdx.x; e < 2 * kTile * kTile; e += kThreads) {
    const int x = e / (2 * kTile), g = e % (2 * kTile), key = x - g + kTile - 1;
    (g < kTile ? low[x][g] : high[x][g - kTile]) = key >= 0 && key < kTile ? ds[x][key] : T(0);
  }
}

// acc[r][e] += Σ_x dG[x][g] values[dim_of(e)][x] for band rows g = g0 + row_of(r): rows of dGᵀ·rq
// (values = rqᵀ), dG read from dS along its diagonals (dG[x][g] = dS[x][x - g + kTile - 1]).
template <typename T, int kDim>
__device__ __forceinline__ void accumulate_diagonals(const ScoreTile<T>& ds, int g0,
                                                     const ColTile<T, kDim>& values,
                                                     T (&acc)[kRowsPer][kDim / kLanes]) {
#pragma unroll 2
  for (int x0 = 0; x0 < kTile; x0 += 4) {
    T w[kRowsPer][4];
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
      for (int xx = 0; xx < 4; ++xx) {
        const int key = x0 + xx - (g0 + row_of(r)) + kTile - 1;
        w[r][xx] = key >= 0 && key < kTile ? ds[x0 + xx][key] : T(0);
      }
#pragma unroll
    for (int e = 0; e < kDim / kLanes; ++e) {
      T v[4];
      load4(&values[dim_of(e)][x0], v);
#pragma unroll
      for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
        for (int xx = 0; xx < 4; ++xx) acc[r][e] = fma(w[r][xx], v[xx], acc[r][e]);
    }
  }
}

}  // namespace relpos::cuda::attention_tiles
