// Tiled attention kernels (FlashAttention-2, Dao 2023, Algorithms 1-2), f32, f64 and bf16, head
// sizes up to kMaxDim; the launchers are attention_kernels.cu, the backward kernels
// attention_grad_kernels.cuh. A block of 128 threads owns 64 rows
// (queries, or keys in the dK/dV kernel) of one batch·head and walks over tiles of 64 columns
// (keys, or queries); each thread holds its share of each 64 x 64 score tile in registers (row_of,
// col_of: 4 x 8 with FMAs, read from shared memory by vector loads; 2 x 16 in bf16, the tensor
// cores' fragments). Logits are kept in base 2 (q pre-scaled by scale·log2 e) so every
// exponential is one exp2.
//   forward:  per key tile S = Q Kᵀ, online softmax (running max m and sum l per row, O and l
//             rescaled by 2^(m_old - m_new)), O += P̃ V; at the end O /= l, lse = (m + log2 l) ln 2.
//   dK, dV:   per key tile, over the query tiles that can see it: P = 2^(S - lse), dP = V dOᵀ,
//             dS = P ∘ (dP ∘ keep - D), dV += P̃ dO, dK += scale dS Q.
//   dQ:       per query tile, over its key tiles: the same P and dS, dQ += scale dS K.
// dQ has its own kernel (it recomputes S and dP) instead of atomics, so results never depend on
// timing. Causal tiles past a tile's last visible pair are never visited. Dropout draws the
// Philox word of pair ((b H + h) Lq + i) Lk + j, as dropout_mask and the CPU kernel do (a block of
// four words serves a thread's run of neighbouring keys, keep_run).
// With the position term (kRel), S gains scale rel_query_i·rel_key[rel_row(δ)] (Transformer-XL's
// (b) + (d), Dai et al. 2019 §3.3): per tile one product G = rq·bandᵀ against the 2 kTile - 1
// table rows the tile's distances read, each pair picking its column (attention_band.cuh); the
// dQ kernel also sums d rel_query += scale dG band; d rel_key has kernels of its own
// (attention_rel_key_kernels.cuh). The launch order is attention_launches.cuh.
// bf16 operands (storage S) are computed on in f32 (T = Compute<S>): their products on the tensor
// cores, the weights P̃ and dS rounded to bf16 as the products' operands (as FlashAttention-2 does
// in bf16), and the scale applied to the products' f32 results rather than to the bf16 q (where it
// would round q a second time); lse, D and d rel_key's sums stay f32. Their weights stay in the
// registers the products leave them in: P̃ and dS are the A operands of O += P̃ V, dV += P̃ᵀ dO,
// dK += dSᵀ Q and dQ += dS K (the dK/dV kernel's rows are keys, so its P̃ᵀ and dSᵀ are its own).
#pragma once

#include <cstdint>

#include "core/cuda/attention_band.cuh"
#include "core/cuda/attention_kernels.h"

namespace relpos::cuda::tiled_attention {

using namespace attention_tiles;  // the kernels are written in its terms

// "pre-scaled": by scale·log2 e for f32 and f64 (pre_scale); bf16 tiles are not, their products
// are (post_scale).
template <typename S, int kDim>
struct ForwardTiles {
  RowTile<S, kDim> q;       // queries, pre-scaled
  OperandTile<S, kDim> kt;  // keys (transposed but for bf16)
  OperandTile<S, kDim> vt;  // values (transposed but for bf16)
  FmaScoreTile<S> p;        // P̃ [query][key]
  bool key_ok[kTile];       // the key exists and the mask keeps it
};

template <typename S, int kDim>
struct KeyTiles {           // dK / dV kernel: the block's keys and values, one query tile at a time
  RowTile<S, kDim> k;       // keys, pre-scaled
  RowTile<S, kDim> v;       // values
  OperandTile<S, kDim> qt;  // queries (transposed but for bf16)
  OperandTile<S, kDim> got;   // output gradients (transposed but for bf16)
  FmaScoreTile<S> p;          // P̃ [key][query]
  FmaScoreTile<S> ds;         // dS [key][query]
  Compute<S> lse[kTile];      // base-2 log-sum-exp of each query
  Compute<S> row_dot[kTile];  // D of each query
};

template <typename S, int kDim>
struct QueryTiles {         // dQ kernel: the block's queries, one key tile at a time
  RowTile<S, kDim> q;       // queries, pre-scaled
  RowTile<S, kDim> go;      // output gradients
  OperandTile<S, kDim> kt;  // keys (transposed but for bf16)
  OperandTile<S, kDim> vt;  // values (transposed but for bf16)
  ScoreTile<S> ds;          // dS [query][key]
  bool key_ok[kTile];
};

template <typename S>
__device__ Compute<S> pre_scale(const AttentionArgs& a) {
  return kTensorCores<S> ? Compute<S>(1) : static_cast<Compute<S>>(a.scale * kLog2e);
}
template <typename S>
__device__ Compute<S> post_scale(const AttentionArgs& a) {
  return kTensorCores<S> ? static_cast<Compute<S>>(a.scale * kLog2e) : Compute<S>(1);
}

// After a kernel's tiles when it has the position term: the query rows' rel_query (pre-scaled,
// except in the d rel_key kernel, which pre-scales the band instead) and the band of table rows
// of the current tile; then the score tiles (in the compute type) for G's halves that the kernel
// lacks: two, but with f32 and f64 none in the dK/dV kernel (its P̃ and dS tiles are free when G
// is formed) and one in the d rel_key kernel (its dS tile holds the low half). The dQ kernel
// writes dG's halves over G's (as bf16 for bf16, in the first half of each tile).
template <typename S, int kDim>
struct PositionTiles {
  RowTile<S, kDim> rq;
  BandTiles<S, kDim> band;
};

// A kernel's tiles, then its position tiles, 128-byte aligned.
template <typename Tiles>
constexpr size_t position_tiles_at() {
  return (sizeof(Tiles) + 127) / 128 * 128;
}
template <typename Tiles, bool kRel, typename S, int kDim, int kScoreTiles = 2>
constexpr size_t shared_bytes() {
  return kRel ? position_tiles_at<Tiles>() + sizeof(PositionTiles<S, kDim>) +
                    kScoreTiles * sizeof(ScoreTile<Compute<S>>)
              : sizeof(Tiles);
}

// A kernel's position tiles and G's halves; nullptr without the term (kRel false).
template <bool kRel, typename Tiles, typename S, int kDim>
__device__ PositionTiles<S, kDim>* position_tiles() {
  if constexpr (kRel)
    return reinterpret_cast<PositionTiles<S, kDim>*>(smem + position_tiles_at<Tiles>());
  else
    return nullptr;
}
template <bool kRel, typename Tiles, typename S, int kDim>
__device__ ScoreTile<Compute<S>>* score_tiles() {
  if constexpr (kRel)
    return reinterpret_cast<ScoreTile<Compute<S>>*>(smem + position_tiles_at<Tiles>() +
                                                    sizeof(PositionTiles<S, kDim>));
  else
    return nullptr;
}
// The tile a kernel of f32 or f64 lends for a half of G (`own`), or for bf16 the extra score tile
// (a pointer: with f32 and f64 the kernel may have no extra tiles).
template <typename S, typename Own>
__device__ ScoreTile<Compute<S>>* g_tile(Own& own, ScoreTile<Compute<S>>* extra) {
  if constexpr (kTensorCores<S>)
    return extra;
  else
    return &own;
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
template <typename S>
__device__ const S* rel_query_of(const AttentionArgs& a, int64_t bh) {
  return static_cast<const S*>(a.rel_query) + bh * a.q_len * a.rel_dim;
}

// Tiles are visited from the last: causal blocks with the most work start first.
__device__ inline int64_t block_tile() {
  return static_cast<int64_t>(gridDim.y - 1 - blockIdx.y);
}

// The forward's end: O /= l and lse = (m + log2 l) ln 2 of each of the thread's rows, written out.
template <typename S, int kDim>
__device__ void finish_rows(const AttentionArgs& a, int64_t bh, int64_t i0,
                            const Compute<S> (&m)[kRowsPer<S>], const Compute<S> (&l)[kRowsPer<S>],
                            RowShare<S, kDim>& o, S* out, Compute<S>* lse) {
  using T = Compute<S>;
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r) {
    const T total = group_reduce<S>(l[r], [](T x, T y) { return x + y; });
    const T inv = total > 0 ? T(1) / total : T(0);  // a row that sees no key outputs zeros
#pragma unroll
    for (int e = 0; e < kDim / kLanes<S>; ++e) o[r][e] *= inv;
    const int64_t i = i0 + row_of<S>(r);
    if (threadIdx.x % kLanes<S> == 0 && i < a.q_len)
      lse[bh * a.q_len + i] =
          total > 0 ? (m[r] + log2(total)) * static_cast<T>(kLn2) : neg_inf<T>();
  }
  store_rows<S, kDim>(o, out + bh * a.q_len * a.value_dim, i0, a.q_len, a.value_dim, T(1));
}

template <typename S, int kDim, bool kRel>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(AttentionArgs a, uint64_t threshold, const S* q, const S* k, const S* v, S* out,
                   Compute<S>* lse) {
  using T = Compute<S>;
  auto& s = *reinterpret_cast<ForwardTiles<S, kDim>*>(smem);
  [[maybe_unused]] PositionTiles<S, kDim>* const pos =
      position_tiles<kRel, ForwardTiles<S, kDim>, S, kDim>();
  [[maybe_unused]] ScoreTile<T>* const scores = score_tiles<kRel, ForwardTiles<S, kDim>, S, kDim>();
  const int64_t bh = blockIdx.x, i0 = block_tile() * kTile;
  const S* kb = k + bh * a.k_len * a.dim;
  const S* vb = v + bh * a.k_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  const T pre = pre_scale<S>(a), post = post_scale<S>(a);
  load_rows<S, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim, pre);
  if constexpr (kRel)
    load_rows<S, kDim>(pos->rq, rel_query_of<S>(a, bh), i0, a.q_len, a.rel_dim, pre);
  RowShare<S, kDim> o = {};
  T m[kRowsPer<S>], l[kRowsPer<S>];
#pragma unroll
  for (int r = 0; r < kRowsPer<S>; ++r) m[r] = neg_inf<T>(), l[r] = 0;
  const TileRange tiles = key_tiles(a, i0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t j0 = t * kTile;
    __syncthreads();  // the previous tile is no longer read
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
    Scores<S> sc;
    tile_product<S, kDim>(s.q, s.kt, sc);
    if constexpr (kTensorCores<S>) scale_tile<S>(sc, post);
    if constexpr (kRel) add_band_scores<true, S>(scores[0], scores[1], sc);
#pragma unroll
    for (int r = 0; r < kRowsPer<S>; ++r) {
      const int64_t i = i0 + row_of<S>(r);
      T tile_max = neg_inf<T>();
#pragma unroll
      for (int c = 0; c < kColsPer<S>; ++c) {
        const int col = col_of<S>(c);
        if (!s.key_ok[col] || !causal_visible(a, i, j0 + col)) sc[r][c] = neg_inf<T>();
        tile_max = max(tile_max, sc[r][c]);
      }
      tile_max = group_reduce<S>(tile_max, [](T x, T y) { return max(x, y); });
      const T m_new = max(m[r], tile_max);
      // Nothing visible yet: every weight so far is 0, and nothing is rescaled.
      const T rescale = m_new == neg_inf<T>() ? T(1) : exp2_of(m[r] - m_new);
      m[r] = m_new;
      l[r] *= rescale;
#pragma unroll
      for (int e = 0; e < kDim / kLanes<S>; ++e) o[r][e] *= rescale;
#pragma unroll
      for (int c0 = 0; c0 < kColsPer<S>; c0 += kRun<S>) {  // sc becomes P̃
        T keep[kRun<S>];
        keep_run<S>(a, bh, i, j0 + col_of<S>(c0), threshold, keep);
#pragma unroll
        for (int x = 0; x < kRun<S>; ++x) {
          const T p = sc[r][c0 + x] == neg_inf<T>() ? T(0) : exp2_of(sc[r][c0 + x] - m_new);
          l[r] += p;
          sc[r][c0 + x] = p * keep[x];
        }
      }
    }
    if constexpr (kTensorCores<S>) {
      accumulate_weights<S, kDim>(sc, s.vt, o);
    } else {
      store_scores<S>(s.p, sc);
      __syncthreads();
      accumulate_rows<S, kDim>(s.p, s.vt, o);
    }
  }
  finish_rows<S, kDim>(a, bh, i0, m, l, o, out, lse);
}

}  // namespace relpos::cuda::tiled_attention
