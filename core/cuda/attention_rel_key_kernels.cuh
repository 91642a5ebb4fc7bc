// The gradient of the position term's table, d rel_key (attention_kernels.cuh and
// attention_grad_kernels.cuh have the other kernels): a block per tile diagonal (query tile - key
// tile fixed) recomputes dS over its tiles and sums scale dS rq into the 2 kTile - 1 band rows they
// share, then one thread per table row x feature adds the bands of neighbouring diagonals (and
// every clamped distance) into the row. Every sum has one owner, in a fixed order: no atomics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/cuda/attention_grad_kernels.cuh"

namespace relpos::cuda::tiled_attention {

template <typename S, int kDim>
struct DiagonalTiles {      // d rel_key kernel: one tile of a diagonal at a time
  RowTile<S, kDim> q;       // queries, pre-scaled
  OperandTile<S, kDim> kt;  // keys (transposed but for bf16)
  RowTile<S, kDim> go;      // output gradients
  OperandTile<S, kDim> vt;  // values (transposed but for bf16)
  // rel_query transposed (not scaled) for the FMA tiles' dGᵀ·rq (bf16 reads the rq position tile)
  std::conditional_t<kTensorCores<S>, NoTile, ColTile<S, kDim>> rqt;
  ScoreTile<S> ds;            // dS [query][key]
  Compute<S> lse[kTile];      // base-2 log-sum-exp of each query
  Compute<S> row_dot[kTile];  // D of each query
  bool key_ok[kTile];
};

// The extra score tiles of the d rel_key kernel: G's high half (f32, f64), both halves (bf16).
template <typename S>
constexpr int kDiagonalScoreTiles = kTensorCores<S> ? 2 : 1;

// d rel_key, step 1. Block (bh, y) owns tile diagonal y - (key tiles - 1) (query tile - key
// tile) and writes, for each of the 2 kTile - 1 distances its tiles read, Σ dS rq over the pairs
// at that distance, dGᵀ·rq summed over its tiles in registers: part[bh · diagonals + y][g][e],
// g the band row.
template <typename S, int kDim>
__global__ void __launch_bounds__(kThreads)
    rel_key_band_kernel(AttentionArgs a, uint64_t threshold, const S* q, const S* k, const S* v,
                        const S* gout, const Compute<S>* lse, const Compute<S>* row_dot,
                        Compute<S>* part) {
  using T = Compute<S>;
  auto& s = *reinterpret_cast<DiagonalTiles<S, kDim>*>(smem);
  PositionTiles<S, kDim>* const pos = position_tiles<true, DiagonalTiles<S, kDim>, S, kDim>();
  ScoreTile<T>* const scores = score_tiles<true, DiagonalTiles<S, kDim>, S, kDim>();
  // G's halves: the low one in the dS tile (f32, f64) until the pairs have read it.
  ScoreTile<T>& low = *g_tile<S>(s.ds, scores);
  ScoreTile<T>& high = scores[kDiagonalScoreTiles<S> - 1];
  const int64_t bh = blockIdx.x;
  const int64_t query_tiles = (a.q_len + kTile - 1) / kTile;
  const int64_t key_tiles_count = (a.k_len + kTile - 1) / kTile;
  const int64_t diagonal = static_cast<int64_t>(blockIdx.y) - (key_tiles_count - 1);
  RowShare<S, kDim> sums_low = {}, sums_high = {};
  const uint8_t* mask = mask_row(a, bh);
  const T pre = pre_scale<S>(a), post = post_scale<S>(a);
  const int64_t first = larger(int64_t{0}, diagonal);
  const int64_t last = smaller(query_tiles - 1, key_tiles_count - 1 + diagonal);
  for (int64_t ti = first; ti <= last; ++ti) {
    const int64_t i0 = ti * kTile, j0 = (ti - diagonal) * kTile;
    const TileRange visible_keys = key_tiles(a, i0);
    if (ti - diagonal < visible_keys.first || ti - diagonal >= visible_keys.end) continue;
    __syncthreads();
    load_rows<S, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim, pre);
    load_operand<S, kDim>(s.kt, k + bh * a.k_len * a.dim, j0, a.k_len, a.dim);
    load_rows<S, kDim>(s.go, gout + bh * a.q_len * a.value_dim, i0, a.q_len, a.value_dim, T(1));
    load_operand<S, kDim>(s.vt, v + bh * a.k_len * a.value_dim, j0, a.k_len, a.value_dim);
    const S* rel_query = rel_query_of<S>(a, bh);
    load_rows<S, kDim>(pos->rq, rel_query, i0, a.q_len, a.rel_dim, T(1));
    if constexpr (!kTensorCores<S>) load_cols<S, kDim>(s.rqt, rel_query, i0, a.q_len, a.rel_dim);
    load_band<S, kDim>(pos->band, a, table_of<S>(a, bh), band_start(a, i0, j0), pre);
    load_key_ok(s.key_ok, mask, j0, a.k_len);
    load_query_stats(s.lse, s.row_dot, a, lse, row_dot, bh, i0);
    __syncthreads();
    band_scores<S, kDim>(pos->rq, pos->band, low, high, post);
    __syncthreads();
    Scores<S> sc, dp;
    tile_product<S, kDim>(s.q, s.kt, sc);
    if constexpr (kTensorCores<S>) scale_tile<S>(sc, post);
    add_band_scores<true, S>(low, high, sc);
    tile_product<S, kDim>(s.go, s.vt, dp);
    T lse2[kRowsPer<S>], dot[kRowsPer<S>];
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r)
      lse2[r] = s.lse[row_of<S>(r)], dot[r] = s.row_dot[row_of<S>(r)];
    query_rows_ds<S>(a, threshold, bh, i0, j0, s.key_ok, lse2, dot, sc, dp);
    __syncthreads();  // every pair has read G
    store_scores<S>(s.ds, dp);
    __syncthreads();
    if constexpr (kTensorCores<S>) {  // dG's halves over G's tiles, then dGᵀ·rq on the tensor cores
      auto& dg_low = *reinterpret_cast<ScoreTile<S>*>(&low);
      auto& dg_high = *reinterpret_cast<ScoreTile<S>*>(&high);
      band_grads<S>(s.ds, dg_low, dg_high);
      __syncthreads();
      accumulate_columns<S, kDim>(dg_low, pos->rq, sums_low);
      accumulate_columns<S, kDim>(dg_high, pos->rq, sums_high);
    } else {
      accumulate_diagonals<S, kDim>(s.ds, 0, s.rqt, sums_low);
      accumulate_diagonals<S, kDim>(s.ds, kTile, s.rqt, sums_high);
    }
  }
  T* band_sums = part + (bh * gridDim.y + blockIdx.y) * (2 * kTile) * a.rel_dim;  // [2 kTile][R]
  store_rows<S, kDim>(sums_low, band_sums, 0, kTile, a.rel_dim, T(1));
  store_rows<S, kDim>(sums_high, band_sums + kTile * a.rel_dim, 0, kTile, a.rel_dim, T(1));
}

__device__ __forceinline__ int64_t floor_div(int64_t x, int64_t y) {
  return x >= 0 ? x / y : -((-x + y - 1) / y);
}

// d rel_key, step 2: table row `row` of head bh gets scale Σ over the distances it serves (one,
// or every clamped one at the ends) of the band sums of the (at most two) diagonals whose bands
// hold that distance. One thread per (bh, row, e); d_rel_key is [B, H, T, R].
template <typename T>
__global__ void rel_key_sum_kernel(AttentionArgs a, const T* part, int64_t diagonals,
                                   T* d_rel_key) {
  const int64_t rows = a.rel_max - a.rel_min + 1, R = a.rel_dim;
  const int64_t at = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (at >= a.batch * a.heads * rows * R) return;
  const int64_t e = at % R, row = at / R % rows, bh = at / (R * rows);
  const int64_t key_tiles_count = (a.k_len + kTile - 1) / kTile;
  const int64_t query_tiles = (a.q_len + kTile - 1) / kTile;
  // The distances of the pairs: δ = i + rel_offset - j over every (i, j).
  const int64_t nearest = a.rel_offset - (a.k_len - 1), farthest = a.rel_offset + a.q_len - 1;
  const int64_t lo = row == 0 ? nearest : larger(nearest, a.rel_min + row);
  const int64_t hi = row == rows - 1 ? farthest : smaller(farthest, a.rel_min + row);
  T total = 0;
  for (int64_t delta = lo; delta <= hi; ++delta) {
    // Diagonal t's band starts at kTile t + rel_offset - (kTile - 1): δ is its row x - kTile t,
    // held when 0 <= x - kTile t <= 2 kTile - 2.
    const int64_t x = delta - a.rel_offset + kTile - 1;
    const int64_t t_first = larger(floor_div(x - (kTile - 1), kTile), -(key_tiles_count - 1));
    const int64_t t_last = smaller(floor_div(x, kTile), query_tiles - 1);
    for (int64_t t = t_first; t <= t_last; ++t)
      total +=
          part[((bh * diagonals + t + key_tiles_count - 1) * 2 * kTile + (x - kTile * t)) * R + e];
  }
  d_rel_key[at] = total * static_cast<T>(a.scale);
}

}  // namespace relpos::cuda::tiled_attention
