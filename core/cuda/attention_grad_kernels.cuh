// The backward kernels of the tiled attention (attention_kernels.cuh has the forward, the tiles
// and the algorithm): dK and dV per key tile, dQ (and d rel_query) per query tile.
#pragma once

#include <cstdint>

#include "core/cuda/attention_kernels.cuh"

namespace relpos::cuda::tiled_attention {

template <typename T>
struct PairGradient {
  T kept;  // P̃ = P ∘ keep
  T ds;    // dS = P ∘ (dP ∘ keep - D)
};

// P = 2^(S - lse) of a visible pair (0 otherwise), from its base-2 logit s2, dP = dO·v_j and its
// dropout keep factor.
template <typename T>
__device__ __forceinline__ PairGradient<T> pair_gradient(bool visible, T s2, T lse2, T dp,
                                                         T row_dot, T keep) {
  if (!visible || lse2 == neg_inf<T>()) return {T(0), T(0)};
  const T p = exp2_of(s2 - lse2);
  return {p * keep, p * (dp * keep - row_dot)};
}

template <typename S, int kDim, bool kRel>
__global__ void __launch_bounds__(kThreads)
    key_grad_kernel(AttentionArgs a, uint64_t threshold, const S* q, const S* k, const S* v,
                    const S* gout, const Compute<S>* lse, const Compute<S>* row_dot, S* dk, S* dv) {
  using T = Compute<S>;
  auto& s = *reinterpret_cast<KeyTiles<S, kDim>*>(smem);
  [[maybe_unused]] PositionTiles<S, kDim>* const pos =
      position_tiles<kRel, KeyTiles<S, kDim>, S, kDim>();
  [[maybe_unused]] ScoreTile<T>* const scores = score_tiles<kRel, KeyTiles<S, kDim>, S, kDim>();
  const int64_t bh = blockIdx.x, j0 = block_tile() * kTile;
  const S* qb = q + bh * a.q_len * a.dim;
  const S* gb = gout + bh * a.q_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  const T pre = pre_scale<S>(a), post = post_scale<S>(a);
  load_rows<S, kDim>(s.k, k + bh * a.k_len * a.dim, j0, a.k_len, a.dim, pre);
  load_rows<S, kDim>(s.v, v + bh * a.k_len * a.value_dim, j0, a.k_len, a.value_dim, T(1));
  bool key_ok[kRowsPer<S>];
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r) {
    const int64_t j = j0 + row_of<S>(r);
    key_ok[r] = j < a.k_len && (mask == nullptr || mask[j] != 0);
  }
  RowShare<S, kDim> dk_acc = {}, dv_acc = {};
  const TileRange tiles = query_tiles(a, j0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t i0 = t * kTile;
    __syncthreads();
    load_operand<S, kDim>(s.qt, qb, i0, a.q_len, a.dim);
    load_operand<S, kDim>(s.got, gb, i0, a.q_len, a.value_dim);
    load_query_stats(s.lse, s.row_dot, a, lse, row_dot, bh, i0);
    if constexpr (kRel) {
      load_rows<S, kDim>(pos->rq, rel_query_of<S>(a, bh), i0, a.q_len, a.rel_dim, pre);
      load_band<S, kDim>(pos->band, a, table_of<S>(a, bh), band_start(a, i0, j0), 1);
    }
    __syncthreads();
    // G's halves (f32, f64: in the P̃ and dS tiles until the pairs have read them).
    [[maybe_unused]] ScoreTile<T>* g_low = nullptr;
    [[maybe_unused]] ScoreTile<T>* g_high = nullptr;
    if constexpr (kRel) {
      g_low = g_tile<S>(s.p, scores);
      g_high = g_tile<S>(s.ds, scores + 1);
      band_scores<S, kDim>(pos->rq, pos->band, *g_low, *g_high, post);
      __syncthreads();
    }
    Scores<S> sc, dp;
    tile_product<S, kDim>(s.k, s.qt, sc);
    if constexpr (kTensorCores<S>) scale_tile<S>(sc, post);
    if constexpr (kRel) add_band_scores<false, S>(*g_low, *g_high, sc);
    tile_product<S, kDim>(s.v, s.got, dp);
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r) {
      const int64_t j = j0 + row_of<S>(r);
#pragma unroll
      for (int c = 0; c < kColsPer<S>; ++c) {  // sc becomes P̃ and dp becomes dS
        const int col = col_of<S>(c);
        const int64_t i = i0 + col;
        const bool visible = key_ok[r] && i < a.q_len && causal_visible(a, i, j);
        // The columns are queries: neighbours are Lk pairs apart, a Philox block each.
        const T keep = visible && a.dropout > 0 ? keep_factor<T>(a, bh, i, j, threshold) : T(1);
        const PairGradient<T> g =
            pair_gradient(visible, sc[r][c], s.lse[col], dp[r][c], s.row_dot[col], keep);
        sc[r][c] = g.kept;
        dp[r][c] = g.ds;
      }
    }
    if constexpr (kTensorCores<S>) {
      accumulate_weights<S, kDim>(sc, s.got, dv_acc);
      accumulate_weights<S, kDim>(dp, s.qt, dk_acc);
    } else {
      if constexpr (kRel) __syncthreads();  // every pair has read G
      store_scores<S>(s.p, sc);
      store_scores<S>(s.ds, dp);
      __syncthreads();
      accumulate_rows<S, kDim>(s.p, s.got, dv_acc);
      accumulate_rows<S, kDim>(s.ds, s.qt, dk_acc);
    }
  }
  store_rows<S, kDim>(dk_acc, dk + bh * a.k_len * a.dim, j0, a.k_len, a.dim,
                      static_cast<T>(a.scale));
  store_rows<S, kDim>(dv_acc, dv + bh * a.k_len * a.value_dim, j0, a.k_len, a.value_dim, T(1));
}

// dp becomes dS over a tile whose rows are queries from i0 and columns keys from j0 (the dQ and
// d rel_key kernels), each row's base-2 log-sum-exp and D given: a run of neighbouring keys shares
// its dropout draws (keep_run).
template <typename S>
__device__ __forceinline__ void query_rows_ds(const AttentionArgs& a, uint64_t threshold,
                                              int64_t bh, int64_t i0, int64_t j0,
                                              const bool* key_ok,
                                              const Compute<S> (&lse2)[kRowsPer<S>],
                                              const Compute<S> (&dot)[kRowsPer<S>],
                                              const Scores<S>& sc, Scores<S>& dp) {
  using T = Compute<S>;
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r) {
    const int64_t i = i0 + row_of<S>(r);
#pragma unroll
    for (int c0 = 0; c0 < kColsPer<S>; c0 += kRun<S>) {
      T keep[kRun<S>];
      keep_run<S>(a, bh, i, j0 + col_of<S>(c0), threshold, keep);
#pragma unroll
      for (int x = 0; x < kRun<S>; ++x) {
        const int c = c0 + x;
        const bool visible =
            key_ok[col_of<S>(c)] && i < a.q_len && causal_visible(a, i, j0 + col_of<S>(c));
        dp[r][c] = pair_gradient(visible, sc[r][c], lse2[r], dp[r][c], dot[r], keep[x]).ds;
      }
    }
  }
}

template <typename S, int kDim, bool kRel>
__global__ void __launch_bounds__(kThreads)
    query_grad_kernel(AttentionArgs a, uint64_t threshold, const S* q, const S* k, const S* v,
                      const S* gout, const Compute<S>* lse, const Compute<S>* row_dot, S* dq,
                      S* d_rel_query) {
  using T = Compute<S>;
  auto& s = *reinterpret_cast<QueryTiles<S, kDim>*>(smem);
  [[maybe_unused]] PositionTiles<S, kDim>* const pos =
      position_tiles<kRel, QueryTiles<S, kDim>, S, kDim>();
  [[maybe_unused]] ScoreTile<T>* const scores = score_tiles<kRel, QueryTiles<S, kDim>, S, kDim>();
  const int64_t bh = blockIdx.x, i0 = block_tile() * kTile;
  const S* kb = k + bh * a.k_len * a.dim;
  const S* vb = v + bh * a.k_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  const T pre = pre_scale<S>(a), post = post_scale<S>(a);
  load_rows<S, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim, pre);
  load_rows<S, kDim>(s.go, gout + bh * a.q_len * a.value_dim, i0, a.q_len, a.value_dim, T(1));
  if constexpr (kRel)
    load_rows<S, kDim>(pos->rq, rel_query_of<S>(a, bh), i0, a.q_len, a.rel_dim, pre);
  T lse2[kRowsPer<S>], dot[kRowsPer<S>];
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r) {
    const int64_t i = i0 + row_of<S>(r);
    lse2[r] = i < a.q_len ? lse[bh * a.q_len + i] * static_cast<T>(kLog2e) : neg_inf<T>();
    dot[r] = i < a.q_len ? row_dot[bh * a.q_len + i] : T(0);
  }
  RowShare<S, kDim> dq_acc = {}, drq_acc = {};
  const TileRange tiles = key_tiles(a, i0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t j0 = t * kTile;
    __syncthreads();
    load_operand<S, kDim>(s.kt, kb, j0, a.k_len, a.dim);
    load_operand<S, kDim>(s.vt, vb, j0, a.k_len, a.value_dim);
    load_key_ok(s.key_ok, mask, j0, a.k_len);
    if constexpr (kRel)
      load_band<S, kDim>(pos->band, a, table_of<S>(a, bh), band_start(a, i0, j0), 1);
    __syncthreads();
    if constexpr (kRel) {
      band_scores<S, kDim>(pos->rq, pos->band, scores[0], scores[1], post);
      __syncthreads();
    }
    Scores<S> sc, dp;
    tile_product<S, kDim>(s.q, s.kt, sc);
    if constexpr (kTensorCores<S>) scale_tile<S>(sc, post);
    if constexpr (kRel) add_band_scores<true, S>(scores[0], scores[1], sc);
    tile_product<S, kDim>(s.go, s.vt, dp);
    query_rows_ds<S>(a, threshold, bh, i0, j0, s.key_ok, lse2, dot, sc, dp);
    if constexpr (kTensorCores<S>) {
      accumulate_weights<S, kDim>(dp, s.kt, dq_acc);
      if constexpr (kRel) store_scores<S>(s.ds, dp);
    } else {
      store_scores<S>(s.ds, dp);
    }
    if constexpr (kRel || !kTensorCores<S>) __syncthreads();
    if constexpr (!kTensorCores<S>) accumulate_rows<S, kDim>(s.ds, s.kt, dq_acc);
    if constexpr (kRel) {  // d rel_query += dG band, dG over G's tiles (read before the barrier)
      auto& dg_low = *reinterpret_cast<ScoreTile<S>*>(&scores[0]);
      auto& dg_high = *reinterpret_cast<ScoreTile<S>*>(&scores[1]);
      band_grads<S>(s.ds, dg_low, dg_high);
      __syncthreads();
      accumulate_rows<S, kDim>(dg_low, pos->band[0], drq_acc);
      accumulate_rows<S, kDim>(dg_high, pos->band[1], drq_acc);
    }
  }
  store_rows<S, kDim>(dq_acc, dq + bh * a.q_len * a.dim, i0, a.q_len, a.dim,
                      static_cast<T>(a.scale));
  if constexpr (kRel)
    store_rows<S, kDim>(drq_acc, d_rel_query + bh * a.q_len * a.rel_dim, i0, a.q_len, a.rel_dim,
                        static_cast<T>(a.scale));
}

}  // namespace relpos::cuda::tiled_attention
