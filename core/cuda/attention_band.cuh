// The position term inside the tiles of the attention kernels (attention_kernels.cuh): the band
// of table rows a tile's distances read, the products that form its scores and gradients, and
// the pairs' picks from them; the tiles and thread geometry are attention_tiles.cuh's.
#pragma once

#include <cstdint>

#include "core/cuda/attention_tiles.cuh"

namespace relpos::cuda::attention_tiles {

// Pair (query i, key j) reads table row rel_row(δ), δ = i + rel_offset - j (core/ops.h
// AttentionSpec::rel_key). The pairs of query rows [i0, i0 + kTile) x keys [j0, j0 + kTile) read
// the 2 kTile - 1 distances from band_start(i0, j0): pair (i0 + x, j0 + y) reads band row
// g = x - y + kTile - 1. A tile's term is one dense product G = rq·bandᵀ [kTile, 2 kTile] in two
// halves of kTile columns, from which each pair picks its column (the rel-shift as index
// arithmetic); its gradients are products with dG, the pairs' dS placed at their columns.

// The band's table rows as the keys are kept (OperandTile): band[h] holds band rows h kTile ..
// h kTile + kTile - 1 (row 2 kTile - 1 stays zero).
template <typename T, int kDim>
using BandTiles = OperandTile<T, kDim>[2];

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
template <typename S, int kDim>
__device__ void load_band(BandTiles<S, kDim>& band, const AttentionArgs& a, const S* table,
                          int64_t delta0, Compute<S> factor) {
  for (int e = threadIdx.x; e < 2 * kTile * kDim; e += kThreads) {
    const int g = e / kDim, d = e % kDim;
    operand_at<S, kDim>(band[g / kTile], g % kTile, d) =
        g < 2 * kTile - 1 && d < a.rel_dim
            ? S(Compute<S>(table[rel_row(a, delta0 + g) * a.rel_dim + d]) * factor)
            : S(0);
  }
}

// acc *= factor.
template <typename S>
__device__ __forceinline__ void scale_tile(Scores<S>& acc, Compute<S> factor) {
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
    for (int c = 0; c < kColsPer<S>; ++c) acc[r][c] *= factor;
}

// low, high = the two halves of G = factor rq·bandᵀ: G[x][g] = factor rq[x]·(band row g), kept in
// the compute type.
template <typename S, int kDim>
__device__ __forceinline__ void band_scores(const RowTile<S, kDim>& rq,
                                            const BandTiles<S, kDim>& band,
                                            ScoreTile<Compute<S>>& low, ScoreTile<Compute<S>>& high,
                                            Compute<S> factor) {
  Scores<S> g;
  tile_product<S, kDim>(rq, band[0], g);
  scale_tile<S>(g, factor);
  store_scores<S>(low, g);
  tile_product<S, kDim>(rq, band[1], g);
  scale_tile<S>(g, factor);
  store_scores<S>(high, g);
}

// acc[r][c] += G[query][query - key + kTile - 1] over this thread's pairs of the tile, whose rows
// are queries and columns keys (kQueryRows) or the other way round.
template <bool kQueryRows, typename S>
__device__ __forceinline__ void add_band_scores(const ScoreTile<Compute<S>>& low,
                                                const ScoreTile<Compute<S>>& high, Scores<S>& acc) {
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
    for (int c = 0; c < kColsPer<S>; ++c) {
      const int query = kQueryRows ? row_of<S>(r) : col_of<S>(c);
      const int g = query - (kQueryRows ? col_of<S>(c) : row_of<S>(r)) + kTile - 1;
      acc[r][c] += g < kTile ? low[query][g] : high[query][g - kTile];
    }
}

// dG from dS [query][key]: low, high = dG's halves, dG[x][g] = dS[x][x - g + kTile - 1] where that
// key is in the tile, else 0.
template <typename S>
__device__ void band_grads(const ScoreTile<S>& ds, ScoreTile<S>& low, ScoreTile<S>& high) {
  for (int e = threadIdx.x; e < 2 * kTile * kTile; e += kThreads) {
    const int x = e / (2 * kTile), g = e % (2 * kTile), key = x - g + kTile - 1;
    (g < kTile ? low[x][g] : high[x][g - kTile]) = key >= 0 && key < kTile ? ds[x][key] : S(0);
  }
}

// acc[r][e] += Σ_x dG[x][g] values[dim_of(e)][x] for band rows g = g0 + row_of(r): rows of dGᵀ·rq
// (values = rqᵀ), dG read from dS along its diagonals (dG[x][g] = dS[x][x - g + kTile - 1]).
template <typename S, int kDim>
__device__ __forceinline__ void accumulate_diagonals(const ScoreTile<S>& ds, int g0,
                                                     const ColTile<S, kDim>& values,
                                                     RowShare<S, kDim>& acc) {
  using T = Compute<S>;
#pragma unroll 2
  for (int x0 = 0; x0 < kTile; x0 += 4) {
    T w[kRowsPer<S>][4];
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r)
#pragma unroll
      for (int xx = 0; xx < 4; ++xx) {
        const int key = x0 + xx - (g0 + row_of<S>(r)) + kTile - 1;
        w[r][xx] = key >= 0 && key < kTile ? T(ds[x0 + xx][key]) : T(0);
      }
    add_weighted_columns<S, kDim>(w, values, x0, acc);
  }
}

}  // namespace relpos::cuda::attention_tiles
