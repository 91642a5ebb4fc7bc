// The machinery of the tiled attention kernels (attention_kernels.cuh): the tile and thread
// geometry, which pairs and tiles a row may see, the dropout keep test, and each thread's share of
// the shared-memory tiles (row_of, col_of, dim_of) with their vector loads, products and stores
// (the position term's band is attention_band.cuh).
// Storage S is f32, f64 or bf16; a kernel computes in Compute<S> (f32 for bf16). f32 and f64 tiles
// multiply with FMAs into each thread's registers; bf16 tiles on the tensor cores (WMMA 16x16x16,
// f32 sums), each warp 16 rows of a product, through an f32 staging tile at the start of shared
// memory from which each thread takes its share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/bf16.h"
#include "core/cuda/attention_kernels.h"
#include "core/philox.h"

namespace relpos::cuda::attention_tiles {

constexpr int kTile = 64;                            // rows per block and columns per inner tile
constexpr int kLanes = 8;                            // threads sharing a row group
constexpr int kRowsPer = 4;                          // rows per thread
constexpr int kColsPer = kTile / kLanes;             // tile columns per thread
constexpr int kThreads = kTile / kRowsPer * kLanes;  // 128
constexpr int kMaxDim = 128;
constexpr int kMma = 16;  // a WMMA fragment is kMma x kMma

// bf16 tiles go through the tensor cores, and their kernels compute in f32.
template <typename S>
constexpr bool kTensorCores = std::is_same_v<S, bf16>;
template <typename S>
using Compute = std::conditional_t<kTensorCores<S>, float, S>;
// Elements after each shared row: 4 (f32 and f64 rows stay 16-byte aligned for vector loads), 8
// for bf16 (WMMA wants a multiple of 8 elements per row and 32-byte aligned fragments).
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

// Thread (warp w, group g of the warp, lane l) holds tile rows 16 w + g + 4 r (r < 4): a warp owns
// 16 consecutive rows, the rows its tensor-core products form (bf16), and its four groups read
// neighbouring rows, so a vector load of each row's next four values is free of bank conflicts.
__device__ __forceinline__ int row_of(int r) {
  constexpr int kWarpRows = kTile / (kThreads / 32), kGroups = 32 / kLanes;
  return kWarpRows * static_cast<int>(threadIdx.x / 32) +
         static_cast<int>(threadIdx.x % 32) / kLanes + kGroups * r;
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
__device__ __forceinline__ void load4(const bf16* p, float (&x)[4]) {
  for (int i = 0; i < 4; ++i) x[i] = p[i];
}
__device__ __forceinline__ void store4(bf16* p, float x0, float x1, float x2, float x3) {
  p[0] = bf16(x0), p[1] = bf16(x1), p[2] = bf16(x2), p[3] = bf16(x3);
}

// Shared tiles: rows [kTile][kDim + kPad] (a row per query or key) and columns
// [kDim][kTile + kPad] (transposed).
template <typename S, int kDim>
using RowTile = S[kTile][kDim + kPad<S>];
template <typename S, int kDim>
using ColTile = S[kDim][kTile + kPad<S>];
template <typename S>
using ScoreTile = S[kTile][kTile + kPad<S>];

// The dynamic shared memory of every kernel: with bf16 tiles an f32 staging tile for the tensor
// cores' results first, then the kernel's own tiles (from tiles_at).
extern __shared__ __align__(128) unsigned char smem[];
template <typename S>
constexpr size_t tiles_at() {
  return kTensorCores<S> ? (sizeof(ScoreTile<float>) + 127) / 128 * 128 : 0;
}
__device__ inline ScoreTile<float>& staging_tile() {
  return *reinterpret_cast<ScoreTile<float>*>(smem);
}

// rows[r][d] = x[row0 + r][d] * factor; zero past `len` rows or `dim`.
template <typename S, int kDim>
__device__ void load_rows(RowTile<S, kDim>& rows, const S* x, int64_t row0, int64_t len, int dim,
                          Compute<S> factor) {
  for (int e = threadIdx.x; e < kTile * kDim; e += kThreads) {
    const int r = e / kDim, d = e % kDim;
    const int64_t row = row0 + r;
    rows[r][d] = row < len && d < dim ? S(Compute<S>(x[row * dim + d]) * factor) : S(0);
  }
}

// cols[d][c] = x[col0 + c][d]; zero past `len` or `dim`.
template <typename S, int kDim>
__device__ void load_cols(ColTile<S, kDim>& cols, const S* x, int64_t col0, int64_t len, int dim) {
  for (int e = threadIdx.x; e < kTile * kDim; e += kThreads) {
    const int c = e / kDim, d = e % kDim;
    const int64_t col = col0 + c;
    cols[d][c] = col < len && d < dim ? x[col * dim + d] : S(0);
  }
}

// Warp w forms rows [kMma w, kMma (w + 1)) of the [kTile, kN] product A·B on the tensor cores (A
// [kTile][kK] row-major at a with row stride lda; B(k, n) at b[k ldb + n] when LayoutB is
// row_major, b[n ldb + k] when col_major) and writes them to the staging tile, once each of its
// threads has taken its share of the previous product from there. Those rows are the warp's own
// (row_of), so warp barriers order the staging tile's writes and reads.
template <int kN, int kK, typename LayoutB>
__device__ __forceinline__ void stage_product(const bf16* a, int lda, const bf16* b, int ldb) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // bf16 WMMA needs sm_80; tiled_attention_fits sends bf16 elsewhere on older GPUs
#else
  namespace wmma = nvcuda::wmma;
  static_assert(kTile / (kThreads / 32) == kMma, "a warp's rows are one fragment's");
  static_assert(kN <= kTile, "the staging tile holds kTile columns (bf16 heads up to 64)");
  const int row0 = kMma * static_cast<int>(threadIdx.x / 32);
  wmma::fragment<wmma::accumulator, kMma, kMma, kMma, float> acc[kN / kMma];
#pragma unroll
  for (int n = 0; n < kN / kMma; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
  for (int k0 = 0; k0 < kK; k0 += kMma) {
    wmma::fragment<wmma::matrix_a, kMma, kMma, kMma, __nv_bfloat16, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, reinterpret_cast<const __nv_bfloat16*>(a + row0 * lda + k0), lda);
#pragma unroll
    for (int n = 0; n < kN / kMma; ++n) {
      wmma::fragment<wmma::matrix_b, kMma, kMma, kMma, __nv_bfloat16, LayoutB> fb;
      const bf16* at = std::is_same_v<LayoutB, wmma::row_major> ? b + k0 * ldb + kMma * n
                                                                : b + kMma * n * ldb + k0;
      wmma::load_matrix_sync(fb, reinterpret_cast<const __nv_bfloat16*>(at), ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
  __syncwarp();  // the warp's threads have read the previous product
  ScoreTile<float>& out = staging_tile();
#pragma unroll
  for (int n = 0; n < kN / kMma; ++n)
    wmma::store_matrix_sync(&out[row0][kMma * n], acc[n], kTile + kPad<float>, wmma::mem_row_major);
  __syncwarp();
#endif
}

// acc[r][c] = Σ_d rows[row_of(r)][d] cols[d][col_of(c)] with FMAs (f32, f64).
template <typename T, int kDim>
__device__ __forceinline__ void fma_tile_product(const RowTile<T, kDim>& rows,
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

// acc[r][c] = Σ_d rows[row_of(r)][d] cols[d][col_of(c)]: this thread's part of rows · colsᵀ.
template <typename S, int kDim>
__device__ __forceinline__ void tile_product(const RowTile<S, kDim>& rows,
                                             const ColTile<S, kDim>& cols,
                                             Compute<S> (&acc)[kRowsPer][kColsPer]) {
  if constexpr (kTensorCores<S>) {
    stage_product<kTile, kDim, nvcuda::wmma::row_major>(&rows[0][0], kDim + kPad<S>, &cols[0][0],
                                                        kTile + kPad<S>);
    const ScoreTile<float>& out = staging_tile();
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
      for (int c = 0; c < kColsPer; ++c) acc[r][c] = out[row_of(r)][col_of(c)];
  } else {
    fma_tile_product<S, kDim>(rows, cols, acc);
  }
}

// acc[r][e] += Σ_i w[r][i] values[dim_of(e)][c0 + i] over four columns, with FMAs.
template <typename S, int kDim>
__device__ __forceinline__ void add_weighted_columns(const Compute<S> (&w)[kRowsPer][4],
                                                     const ColTile<S, kDim>& values, int c0,
                                                     Compute<S> (&acc)[kRowsPer][kDim / kLanes]) {
#pragma unroll
  for (int e = 0; e < kDim / kLanes; ++e) {
    Compute<S> x[4];
    load4(&values[dim_of(e)][c0], x);
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][e] = fma(w[r][i], x[i], acc[r][e]);
  }
}

// acc[r][e] += Σ_c weights[row_of(r)][c] values[dim_of(e)][c] with FMAs (f32, f64).
template <typename T, int kDim>
__device__ __forceinline__ void fma_accumulate_rows(const ScoreTile<T>& weights,
                                                    const ColTile<T, kDim>& values,
                                                    T (&acc)[kRowsPer][kDim / kLanes]) {
#pragma unroll 2
  for (int c0 = 0; c0 < kTile; c0 += 4) {
    T w[kRowsPer][4];
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) load4(&weights[row_of(r)][c0], w[r]);
    add_weighted_columns<T, kDim>(w, values, c0, acc);
  }
}

// acc[r][e] += Σ_c weights[row_of(r)][c] values[dim_of(e)][c] over the tile's kTile columns.
template <typename S, int kDim>
__device__ __forceinline__ void accumulate_rows(const ScoreTile<S>& weights,
                                                const ColTile<S, kDim>& values,
                                                Compute<S> (&acc)[kRowsPer][kDim / kLanes]) {
  if constexpr (kTensorCores<S>) {
    stage_product<kDim, kTile, nvcuda::wmma::col_major>(&weights[0][0], kTile + kPad<S>,
                                                        &values[0][0], kTile + kPad<S>);
    const ScoreTile<float>& out = staging_tile();
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r)
#pragma unroll
      for (int e = 0; e < kDim / kLanes; ++e) acc[r][e] += out[row_of(r)][dim_of(e)];
  } else {
    fma_accumulate_rows<S, kDim>(weights, values, acc);
  }
}

// weights[row_of(r)][col_of(c)] = w[r][c], as vector stores.
template <typename S>
__device__ __forceinline__ void store_scores(ScoreTile<S>& weights,
                                             const Compute<S> (&w)[kRowsPer][kColsPer]) {
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
template <int kDim, typename T, typename O>
__device__ void store_rows(const T (&acc)[kRowsPer][kDim / kLanes], O* x, int64_t row0, int64_t len,
                           int dim, T factor) {
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const int64_t row = row0 + row_of(r);
    if (row >= len) continue;
#pragma unroll
    for (int e = 0; e < kDim / kLanes; ++e)
      if (dim_of(e) < dim) x[row * dim + dim_of(e)] = O(acc[r][e] * factor);
  }
}

}  // namespace relpos::cuda::attention_tiles
