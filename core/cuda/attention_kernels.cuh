// Tiled attention kernels (FlashAttention-2, Dao 2023, Algorithms 1-2), f32 and f64, head sizes
// up to kMaxDim; the launchers are attention_kernels.cu. A block of 128 threads owns 64 rows
// (queries, or keys in the dK/dV kernel) of one batch·head and walks over tiles of 64 columns
// (keys, or queries); each thread holds 4 x 8 of each 64 x 64 score tile in registers (row_of,
// col_of) and reads its shared operands with vector loads. Logits are kept in base 2 (q pre-scaled
// by scale·log2 e) so every exponential is one exp2.
//   forward:  per key tile S = Q Kᵀ, online softmax (running max m and sum l per row, O and l
//             rescaled by 2^(m_old - m_new)), O += P̃ V; at the end O /= l, lse = (m + log2 l) ln 2.
//   dK, dV:   per key tile, over the query tiles that can see it: P = 2^(S - lse), dP = V dOᵀ,
//             dS = P ∘ (dP ∘ keep - D), dV += P̃ dO, dK += scale dS Q.
//   dQ:       per query tile, over its key tiles: the same P and dS, dQ += scale dS K.
// dQ has its own kernel (it recomputes S and dP) instead of atomics, so results never depend on
// timing. Causal tiles past a tile's last visible pair are never visited. Dropout draws the
// Philox word of pair ((b H + h) Lq + i) Lk + j, as dropout_mask and the CPU kernel do.
// With the position term (kRel), S gains scale rel_query_i·rel_key[rel_row(δ)] (Transformer-XL's
// (b) + (d), Dai et al. 2019 §3.3): per tile one product G = rq·bandᵀ against the 2 kTile - 1
// table rows the tile's distances read, each pair picking its column (attention_tiles.cuh); the
// dQ kernel also sums d rel_query += scale dG band; d rel_key has kernels of its own
// (attention_rel_key_kernels.cuh). The launch order is attention_launches.cuh.
#pragma once

#include <cstdint>

#include "core/cuda/attention_kernels.h"
#include "core/cuda/attention_tiles.cuh"

namespace relpos::cuda::tiled_attention {

using namespace attention_tiles;  // the kernels are written in its terms

template <typename T, int kDim>
struct ForwardTiles {
  RowTile<T, kDim> q;   // queries, pre-scaled by scale·log2 e
  ColTile<T, kDim> kt;  // keys, transposed
  ColTile<T, kDim> vt;  // values, transposed
  ScoreTile<T> p;       // P̃ [query][key]
  bool key_ok[kTile];   // the key exists and the mask keeps it
};

template <typename T, int kDim>
struct KeyTiles {        // dK / dV kernel: the block's keys and values, one query tile at a time
  RowTile<T, kDim> k;    // keys, pre-scaled by scale·log2 e
  RowTile<T, kDim> v;    // values
  ColTile<T, kDim> qt;   // queries, transposed
  ColTile<T, kDim> got;  // output gradients, transposed
  ScoreTile<T> p;        // P̃ [key][query]
  ScoreTile<T> ds;       // dS [key][query]
  T lse[kTile];          // base-2 log-sum-exp of each query
  T row_dot[kTile];      // D of each query
};

template <typename T, int kDim>
struct QueryTiles {     // dQ kernel: the block's queries, one key tile at a time
  RowTile<T, kDim> q;   // queries, pre-scaled by scale·log2 e
  RowTile<T, kDim> go;  // output gradients
  ColTile<T, kDim> kt;  // keys, transposed
  ColTile<T, kDim> vt;  // values, transposed
  ScoreTile<T> ds;      // dS [query][key]
  bool key_ok[kTile];
};

// After a kernel's tiles when it has the position term: the query rows' rel_query (pre-scaled by
// scale·log2 e, except in the d rel_key kernel, which pre-scales the band instead) and the band of
// table rows of the current tile; then the score tiles for G's (or dG's) halves that the kernel
// lacks: two, but none in the dK/dV kernel (its P̃ and dS tiles are free when G is formed) and
// one in the d rel_key kernel (its dS tile holds the low half).
template <typename T, int kDim>
struct PositionTiles {
  RowTile<T, kDim> rq;
  BandTiles<T, kDim> band;
};

// Where a kernel's position tiles start: after its own, 16-byte aligned.
template <typename Tiles>
constexpr size_t position_tiles_at() {
  return (sizeof(Tiles) + 15) / 16 * 16;
}
template <typename Tiles, bool kRel, typename T, int kDim, int kScoreTiles = 2>
constexpr size_t shared_bytes() {
  return kRel ? position_tiles_at<Tiles>() + sizeof(PositionTiles<T, kDim>) +
                    kScoreTiles * sizeof(ScoreTile<T>)
              : sizeof(Tiles);
}

// The dynamic shared memory of every kernel.
extern __shared__ __align__(16) unsigned char smem[];

// A kernel's position tiles and G's halves; nullptr without the term (kRel false).
template <bool kRel, typename Tiles, typename T, int kDim>
__device__ PositionTiles<T, kDim>* position_tiles() {
  if constexpr (kRel)
    return reinterpret_cast<PositionTiles<T, kDim>*>(smem + position_tiles_at<Tiles>());
  else
    return nullptr;
}
template <bool kRel, typename Tiles, typename T, int kDim>
__device__ ScoreTile<T>* score_tiles() {
  if constexpr (kRel)
    return reinterpret_cast<ScoreTile<T>*>(smem + position_tiles_at<Tiles>() +
                                           sizeof(PositionTiles<T, kDim>));
  else
    return nullptr;
}

__device__ inline const uint8_t* mask_row(const AttentionArgs& a, int64_t bh) {
  return a.key_mask != nullptr ? a.key_mask + (bh / a.heads) * a.k_len : nullptr;
}

__device__ inline void load_key_ok(bool* key_ok, const uint8_t* mask, int64_t j0, int64_t k_len) {
  for (int c = threadIdx.x; c < kTile; c += kThreads) {
    const int64_t j = j0 + c;
    key_ok[c] = j < k_len && (mask == nullptr || mask[j] != 0);
  }
}

// The base-2 log-sum-exp and D of query rows [i0, i0 + kTile) (-inf and 0 past Lq).
template <typename T>
__device__ void load_query_stats(T* lse2, T* dot, const AttentionArgs& a, const T* lse,
                                 const T* row_dot, int64_t bh, int64_t i0) {
  for (int c = threadIdx.x; c < kTile; c += kThreads) {
    const int64_t i = i0 + c;
    lse2[c] = i < a.q_len ? lse[bh * a.q_len + i] * static_cast<T>(kLog2e) : neg_inf<T>();
    dot[c] = i < a.q_len ? row_dot[bh * a.q_len + i] : T(0);
  }
}

// Head bh's rel_query, [Lq, R].
template <typename T>
__device__ const T* rel_query_of(const AttentionArgs& a, int64_t bh) {
  return static_cast<const T*>(a.rel_query) + bh * a.q_len * a.rel_dim;
}

// Tiles are visited from the last: causal blocks with the most work start first.
__device__ inline int64_t block_tile() {
  return static_cast<int64_t>(gridDim.y - 1 - blockIdx.y);
}

template <typename T, int kDim, bool kRel>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(AttentionArgs a, uint64_t threshold, const T* q, const T* k, const T* v, T* out,
                   T* lse) {
  auto& s = *reinterpret_cast<ForwardTiles<T, kDim>*>(smem);
  [[maybe_unused]] PositionTiles<T, kDim>* const pos =
      position_tiles<kRel, ForwardTiles<T, kDim>, T, kDim>();
  [[maybe_unused]] ScoreTile<T>* const scores = score_tiles<kRel, ForwardTiles<T, kDim>, T, kDim>();
  const int64_t bh = blockIdx.x, i0 = block_tile() * kTile;
  const T* kb = k + bh * a.k_len * a.dim;
  const T* vb = v + bh * a.k_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  const T log2_scale = static_cast<T>(a.scale * kLog2e);
  load_rows<T, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim, log2_scale);
  if constexpr (kRel)
    load_rows<T, kDim>(pos->rq, rel_query_of<T>(a, bh), i0, a.q_len, a.rel_dim, log2_scale);
  T o[kRowsPer][kDim / kLanes] = {};
  T m[kRowsPer], l[kRowsPer];
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) m[r] = neg_inf<T>(), l[r] = 0;
  const TileRange tiles = key_tiles(a, i0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t j0 = t * kTile;
    __syncthreads();  // the previous tile is no longer read
    load_cols<T, kDim>(s.kt, kb, j0, a.k_len, a.dim);
    load_cols<T, kDim>(s.vt, vb, j0, a.k_len, a.value_dim);
    load_key_ok(s.key_ok, mask, j0, a.k_len);
    if constexpr (kRel)
      load_band<T, kDim>(pos->band, a, table_of<T>(a, bh), band_start(a, i0, j0), 1);
    __syncthreads();
    if constexpr (kRel) {
      band_scores<T, kDim>(pos->rq, pos->band, scores[0], scores[1]);
      __syncthreads();
    }
    T sc[kRowsPer][kColsPer];
    tile_product<T, kDim>(s.q, s.kt, sc);
    if constexpr (kRel) add_band_scores<true>(scores[0], scores[1], sc);
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) {
      const int64_t i = i0 + row_of(r);
      T tile_max = neg_inf<T>();
#pragma unroll
      for (int c = 0; c < kColsPer; ++c) {
        if (!s.key_ok[col_of(c)] || !causal_visible(a, i, j0 + col_of(c))) sc[r][c] = neg_inf<T>();
        tile_max = max(tile_max, sc[r][c]);
      }
      tile_max = group_reduce(tile_max, [](T x, T y) { return max(x, y); });
      const T m_new = max(m[r], tile_max);
      // Nothing visible yet: every weight so far is 0, and nothing is rescaled.
      const T rescale = m_new == neg_inf<T>() ? T(1) : exp2_of(m[r] - m_new);
      m[r] = m_new;
      l[r] *= rescale;
#pragma unroll
      for (int e = 0; e < kDim / kLanes; ++e) o[r][e] *= rescale;
#pragma unroll
      for (int c = 0; c < kColsPer; ++c) {  // sc becomes P̃
        T p = sc[r][c] == neg_inf<T>() ? T(0) : exp2_of(sc[r][c] - m_new);
        l[r] += p;
        if (a.dropout > 0 && p != T(0) && i < a.q_len)
          p *= keep_factor<T>(a, bh, i, j0 + col_of(c), threshold);
        sc[r][c] = p;
      }
    }
    store_scores(s.p, sc);
    __syncthreads();
    accumulate_rows<T, kDim>(s.p, s.vt, o);
  }
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const T total = group_reduce(l[r], [](T x, T y) { return x + y; });
    const T inv = total > 0 ? T(1) / total : T(0);  // a row that sees no key outputs zeros
#pragma unroll
    for (int e = 0; e < kDim / kLanes; ++e) o[r][e] *= inv;
    const int64_t i = i0 + row_of(r);
    if (threadIdx.x % kLanes == 0 && i < a.q_len)
      lse[bh * a.q_len + i] =
          total > 0 ? (m[r] + log2(total)) * static_cast<T>(kLn2) : neg_inf<T>();
  }
  store_rows<T, kDim>(o, out + bh * a.q_len * a.value_dim, i0, a.q_len, a.value_dim, T(1));
}

template <typename T>
struct PairGradient {
  T kept;  // P̃ = P ∘ keep
  T ds;    // dS = P ∘ (dP ∘ keep - D)
};

// P = 2^(S - lse) of a visible pair (0 otherwise), from its base-2 logit s2 and dP = dO·v_j.
template <typename T>
__device__ __forceinline__ PairGradient<T> pair_gradient(const AttentionArgs& a, uint64_t threshold,
                                                         int64_t bh, int64_t i, int64_t j,
                                                         bool visible, T s2, T lse2, T dp,
                                                         T row_dot) {
  if (!visible || lse2 == neg_inf<T>()) return {T(0), T(0)};
  const T p = exp2_of(s2 - lse2);
  const T keep = a.dropout > 0 ? keep_factor<T>(a, bh, i, j, threshold) : T(1);
  return {p * keep, p * (dp * keep - row_dot)};
}

template <typename T, int kDim, bool kRel>
__global__ void __launch_bounds__(kThreads)
    key_grad_kernel(AttentionArgs a, uint64_t threshold, const T* q, const T* k, const T* v,
                    const T* gout, const T* lse, const T* row_dot, T* dk, T* dv) {
  auto& s = *reinterpret_cast<KeyTiles<T, kDim>*>(smem);
  [[maybe_unused]] PositionTiles<T, kDim>* const pos =
      position_tiles<kRel, KeyTiles<T, kDim>, T, kDim>();
  const int64_t bh = blockIdx.x, j0 = block_tile() * kTile;
  const T* qb = q + bh * a.q_len * a.dim;
  const T* gb = gout + bh * a.q_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  const T log2_scale = static_cast<T>(a.scale * kLog2e);
  load_rows<T, kDim>(s.k, k + bh * a.k_len * a.dim, j0, a.k_len, a.dim, log2_scale);
  load_rows<T, kDim>(s.v, v + bh * a.k_len * a.value_dim, j0, a.k_len, a.value_dim, T(1));
  bool key_ok[kRowsPer];
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const int64_t j = j0 + row_of(r);
    key_ok[r] = j < a.k_len && (mask == nullptr || mask[j] != 0);
  }
  T dk_acc[kRowsPer][kDim / kLanes] = {}, dv_acc[kRowsPer][kDim / kLanes] = {};
  const TileRange tiles = query_tiles(a, j0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t i0 = t * kTile;
    __syncthreads();
    load_cols<T, kDim>(s.qt, qb, i0, a.q_len, a.dim);
    load_cols<T, kDim>(s.got, gb, i0, a.q_len, a.value_dim);
    load_query_stats(s.lse, s.row_dot, a, lse, row_dot, bh, i0);
    if constexpr (kRel) {
      load_rows<T, kDim>(pos->rq, rel_query_of<T>(a, bh), i0, a.q_len, a.rel_dim, log2_scale);
      load_band<T, kDim>(pos->band, a, table_of<T>(a, bh), band_start(a, i0, j0), 1);
    }
    __syncthreads();
    if constexpr (kRel) {  // G's halves in the P̃ and dS tiles until the pairs have read them
      band_scores<T, kDim>(pos->rq, pos->band, s.p, s.ds);
      __syncthreads();
    }
    T sc[kRowsPer][kColsPer], dp[kRowsPer][kColsPer];
    tile_product<T, kDim>(s.k, s.qt, sc);
    if constexpr (kRel) add_band_scores<false>(s.p, s.ds, sc);
    tile_product<T, kDim>(s.v, s.got, dp);
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) {
      const int64_t j = j0 + row_of(r);
#pragma unroll
      for (int c = 0; c < kColsPer; ++c) {  // sc becomes P̃ and dp becomes dS
        const int col = col_of(c);
        const int64_t i = i0 + col;
        const bool visible = key_ok[r] && i < a.q_len && causal_visible(a, i, j);
        const PairGradient<T> g = pair_gradient(a, threshold, bh, i, j, visible, sc[r][c],
                                                s.lse[col], dp[r][c], s.row_dot[col]);
        sc[r][c] = g.kept;
        dp[r][c] = g.ds;
      }
    }
    if constexpr (kRel) __syncthreads();  // every pair has read G
    store_scores(s.p, sc);
    store_scores(s.ds, dp);
    __syncthreads();
    accumulate_rows<T, kDim>(s.p, s.got, dv_acc);
    accumulate_rows<T, kDim>(s.ds, s.qt, dk_acc);
  }
  store_rows<T, kDim>(dk_acc, dk + bh * a.k_len * a.dim, j0, a.k_len, a.dim,
                      static_cast<T>(a.scale));
  store_rows<T, kDim>(dv_acc, dv + bh * a.k_len * a.value_dim, j0, a.k_len, a.value_dim, T(1));
}

template <typename T, int kDim, bool kRel>
__global__ void __launch_bounds__(kThreads)
    query_grad_kernel(AttentionArgs a, uint64_t threshold, const T* q, const T* k, const T* v,
                      const T* gout, const T* lse, const T* row_dot, T* dq, T* d_rel_query) {
  auto& s = *reinterpret_cast<QueryTiles<T, kDim>*>(smem);
  [[maybe_unused]] PositionTiles<T, kDim>* const pos =
      position_tiles<kRel, QueryTiles<T, kDim>, T, kDim>();
  [[maybe_unused]] ScoreTile<T>* const scores = score_tiles<kRel, QueryTiles<T, kDim>, T, kDim>();
  const int64_t bh = blockIdx.x, i0 = block_tile() * kTile;
  const T* kb = k + bh * a.k_len * a.dim;
  const T* vb = v + bh * a.k_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  const T log2_scale = static_cast<T>(a.scale * kLog2e);
  load_rows<T, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim, log2_scale);
  load_rows<T, kDim>(s.go, gout + bh * a.q_len * a.value_dim, i0, a.q_len, a.value_dim, T(1));
  if constexpr (kRel)
    load_rows<T, kDim>(pos->rq, rel_query_of<T>(a, bh), i0, a.q_len, a.rel_dim, log2_scale);
  T lse2[kRowsPer], dot[kRowsPer];
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const int64_t i = i0 + row_of(r);
    lse2[r] = i < a.q_len ? lse[bh * a.q_len + i] * static_cast<T>(kLog2e) : neg_inf<T>();
    dot[r] = i < a.q_len ? row_dot[bh * a.q_len + i] : T(0);
  }
  T dq_acc[kRowsPer][kDim / kLanes] = {}, drq_acc[kRowsPer][kDim / kLanes] = {};
  const TileRange tiles = key_tiles(a, i0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t j0 = t * kTile;
    __syncthreads();
    load_cols<T, kDim>(s.kt, kb, j0, a.k_len, a.dim);
    load_cols<T, kDim>(s.vt, vb, j0, a.k_len, a.value_dim);
    load_key_ok(s.key_ok, mask, j0, a.k_len);
    if constexpr (kRel)
      load_band<T, kDim>(pos->band, a, table_of<T>(a, bh), band_start(a, i0, j0), 1);
    __syncthreads();
    if constexpr (kRel) {
      band_scores<T, kDim>(pos->rq, pos->band, scores[0], scores[1]);
      __syncthreads();
    }
    T sc[kRowsPer][kColsPer], dp[kRowsPer][kColsPer];
    tile_product<T, kDim>(s.q, s.kt, sc);
    if constexpr (kRel) add_band_scores<true>(scores[0], scores[1], sc);
    tile_product<T, kDim>(s.go, s.vt, dp);
#pragma unroll
    for (int r = 0; r < kRowsPer; ++r) {
      const int64_t i = i0 + row_of(r);
#pragma unroll
      for (int c = 0; c < kColsPer; ++c) {  // dp becomes dS
        const int64_t j = j0 + col_of(c);
        const bool visible = s.key_ok[col_of(c)] && i < a.q_len && causal_visible(a, i, j);
        dp[r][c] =
            pair_gradient(a, threshold, bh, i, j, visible, sc[r][c], lse2[r], dp[r][c], dot[r]).ds;
      }
    }
    store_scores(s.ds, dp);
    __syncthreads();
    accumulate_rows<T, kDim>(s.ds, s.kt, dq_acc);
    if constexpr (kRel) {  // d rel_query += dG band, dG in G's tiles (read before the barrier)
      band_grads(s.ds, scores[0], scores[1]);
      __syncthreads();
      accumulate_rows<T, kDim>(scores[0], pos->band[0], drq_acc);
      accumulate_rows<T, kDim>(scores[1], pos->band[1], drq_acc);
    }
  }
  store_rows<T, kDim>(dq_acc, dq + bh * a.q_len * a.dim, i0, a.q_len, a.dim,
                      static_cast<T>(a.scale));
  if constexpr (kRel)
    store_rows<T, kDim>(drq_acc, d_rel_query + bh * a.q_len * a.rel_dim, i0, a.q_len, a.rel_dim,
                        static_cast<T>(a.scale));
}

}  // namespace relpos::cuda::tiled_attention
