// Tiled attention on CUDA (FlashAttention-2, Dao 2023, Algorithms 1-2), f32 and f64, head sizes
// up to kMaxDim. A block of 128 threads owns 64 rows (queries, or keys in the dK/dV kernel) of one
// batch·head and walks over tiles of 64 columns (keys, or queries); each thread holds 4 x 8 of
// each 64 x 64 score tile in registers (row_of, col_of) and reads its shared operands with vector
// loads. Logits are kept in base 2 (q pre-scaled by scale·log2 e) so every exponential is one exp2.
//   forward:  per key tile S = Q Kᵀ, online softmax (running max m and sum l per row, O and l
//             rescaled by 2^(m_old - m_new)), O += P̃ V; at the end O /= l, lse = (m + log2 l) ln 2.
//   dK, dV:   per key tile, over the query tiles that can see it: P = 2^(S - lse), dP = V dOᵀ,
//             dS = P ∘ (dP ∘ keep - D), dV += P̃ dO, dK += scale dS Q.
//   dQ:       per query tile, over its key tiles: the same P and dS, dQ += scale dS K.
// dQ has its own kernel (it recomputes S and dP) instead of atomics, so results never depend on
// timing. Causal tiles past a tile's last visible pair are never visited. Dropout draws the
// Philox word of pair ((b H + h) Lq + i) Lk + j, as dropout_mask and the CPU kernel do.
#include <algorithm>
#include <cstdint>

#include "core/cuda/attention_kernels.h"
#include "core/cuda/attention_tiles.cuh"

namespace relpos::cuda {

namespace {

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

__device__ const uint8_t* mask_row(const AttentionArgs& a, int64_t bh) {
  return a.key_mask != nullptr ? a.key_mask + (bh / a.heads) * a.k_len : nullptr;
}

__device__ void load_key_ok(bool* key_ok, const uint8_t* mask, int64_t j0, int64_t k_len) {
  for (int c = threadIdx.x; c < kTile; c += kThreads) {
    const int64_t j = j0 + c;
    key_ok[c] = j < k_len && (mask == nullptr || mask[j] != 0);
  }
}

// Tiles are visited from the last: causal blocks with the most work start first.
__device__ int64_t block_tile() {
  return static_cast<int64_t>(gridDim.y - 1 - blockIdx.y);
}

template <typename T, int kDim>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(AttentionArgs a, uint64_t threshold, const T* q, const T* k, const T* v, T* out,
                   T* lse) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto& s = *reinterpret_cast<ForwardTiles<T, kDim>*>(smem);
  const int64_t bh = blockIdx.x, i0 = block_tile() * kTile;
  const T* kb = k + bh * a.k_len * a.dim;
  const T* vb = v + bh * a.k_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  load_rows<T, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim,
                     static_cast<T>(a.scale * kLog2e));
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
    __syncthreads();
    T sc[kRowsPer][kColsPer];
    tile_product<T, kDim>(s.q, s.kt, sc);
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

template <typename T, int kDim>
__global__ void __launch_bounds__(kThreads)
    key_grad_kernel(AttentionArgs a, uint64_t threshold, const T* q, const T* k, const T* v,
                    const T* gout, const T* lse, const T* row_dot, T* dk, T* dv) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto& s = *reinterpret_cast<KeyTiles<T, kDim>*>(smem);
  const int64_t bh = blockIdx.x, j0 = block_tile() * kTile;
  const T* qb = q + bh * a.q_len * a.dim;
  const T* gb = gout + bh * a.q_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  load_rows<T, kDim>(s.k, k + bh * a.k_len * a.dim, j0, a.k_len, a.dim,
                     static_cast<T>(a.scale * kLog2e));
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
    for (int c = threadIdx.x; c < kTile; c += kThreads) {
      const int64_t i = i0 + c;
      s.lse[c] = i < a.q_len ? lse[bh * a.q_len + i] * static_cast<T>(kLog2e) : neg_inf<T>();
      s.row_dot[c] = i < a.q_len ? row_dot[bh * a.q_len + i] : T(0);
    }
    __syncthreads();
    T sc[kRowsPer][kColsPer], dp[kRowsPer][kColsPer];
    tile_product<T, kDim>(s.k, s.qt, sc);
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

template <typename T, int kDim>
__global__ void __launch_bounds__(kThreads)
    query_grad_kernel(AttentionArgs a, uint64_t threshold, const T* q, const T* k, const T* v,
                      const T* gout, const T* lse, const T* row_dot, T* dq) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto& s = *reinterpret_cast<QueryTiles<T, kDim>*>(smem);
  const int64_t bh = blockIdx.x, i0 = block_tile() * kTile;
  const T* kb = k + bh * a.k_len * a.dim;
  const T* vb = v + bh * a.k_len * a.value_dim;
  const uint8_t* mask = mask_row(a, bh);
  load_rows<T, kDim>(s.q, q + bh * a.q_len * a.dim, i0, a.q_len, a.dim,
                     static_cast<T>(a.scale * kLog2e));
  load_rows<T, kDim>(s.go, gout + bh * a.q_len * a.value_dim, i0, a.q_len, a.value_dim, T(1));
  T lse2[kRowsPer], dot[kRowsPer];
#pragma unroll
  for (int r = 0; r < kRowsPer; ++r) {
    const int64_t i = i0 + row_of(r);
    lse2[r] = i < a.q_len ? lse[bh * a.q_len + i] * static_cast<T>(kLog2e) : neg_inf<T>();
    dot[r] = i < a.q_len ? row_dot[bh * a.q_len + i] : T(0);
  }
  T dq_acc[kRowsPer][kDim / kLanes] = {};
  const TileRange tiles = key_tiles(a, i0);
  for (int64_t t = tiles.first; t < tiles.end; ++t) {
    const int64_t j0 = t * kTile;
    __syncthreads();
    load_cols<T, kDim>(s.kt, kb, j0, a.k_len, a.dim);
    load_cols<T, kDim>(s.vt, vb, j0, a.k_len, a.value_dim);
    load_key_ok(s.key_ok, mask, j0, a.k_len);
    __syncthreads();
    T sc[kRowsPer][kColsPer], dp[kRowsPer][kColsPer];
    tile_product<T, kDim>(s.q, s.kt, sc);
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
  }
  store_rows<T, kDim>(dq_acc, dq + bh * a.q_len * a.dim, i0, a.q_len, a.dim,
                      static_cast<T>(a.scale));
}

int max_shared_bytes() {
  int device = 0, bytes = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess)
    return 0;
  return bytes;
}

// The head size the kernels are instantiated for: the smallest of 32, 64, 128 >= dim and
// value_dim (0: none).
int tile_dim(int64_t dim, int64_t value_dim) {
  const int64_t need = std::max(dim, value_dim);
  for (int d : {32, 64, kMaxDim})
    if (need <= d) return d;
  return 0;
}

template <typename T, int kDim>
size_t largest_tiles() {
  return std::max(
      {sizeof(ForwardTiles<T, kDim>), sizeof(KeyTiles<T, kDim>), sizeof(QueryTiles<T, kDim>)});
}

template <typename T>
size_t largest_tiles(int dim) {
  return dim == 32   ? largest_tiles<T, 32>()
         : dim == 64 ? largest_tiles<T, 64>()
                     : largest_tiles<T, kMaxDim>();
}

// Launches kernel with Tiles bytes of dynamic shared memory (raising its limit past 48 KB).
template <typename Tiles, typename Kernel, typename... Args>
cudaError_t launch(Kernel kernel, int64_t rows, int64_t batch_heads, cudaStream_t stream,
                   Args... args) {
  const cudaError_t set = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(sizeof(Tiles)));
  if (set != cudaSuccess) return set;
  const dim3 grid(static_cast<unsigned>(batch_heads),
                  static_cast<unsigned>((rows + kTile - 1) / kTile));
  kernel<<<grid, kThreads, sizeof(Tiles), stream>>>(args...);
  return cudaGetLastError();
}

template <typename T, int kDim>
cudaError_t forward(const AttentionArgs& a, const void* q, const void* k, const void* v, void* out,
                    void* lse, cudaStream_t stream) {
  return launch<ForwardTiles<T, kDim>>(forward_kernel<T, kDim>, a.q_len, a.batch * a.heads, stream,
                                       a, keep_threshold(a.dropout), static_cast<const T*>(q),
                                       static_cast<const T*>(k), static_cast<const T*>(v),
                                       static_cast<T*>(out), static_cast<T*>(lse));
}

template <typename T, int kDim>
cudaError_t backward(const AttentionArgs& a, const void* q, const void* k, const void* v,
                     const void* gout, const void* lse, const void* row_dot, void* dq, void* dk,
                     void* dv, cudaStream_t stream) {
  const uint64_t threshold = keep_threshold(a.dropout);
  const auto* qt = static_cast<const T*>(q);
  const auto* kt = static_cast<const T*>(k);
  const auto* vt = static_cast<const T*>(v);
  const auto* gt = static_cast<const T*>(gout);
  const auto* lt = static_cast<const T*>(lse);
  const auto* dt = static_cast<const T*>(row_dot);
  const cudaError_t keys = launch<KeyTiles<T, kDim>>(
      key_grad_kernel<T, kDim>, a.k_len, a.batch * a.heads, stream, a, threshold, qt, kt, vt, gt,
      lt, dt, static_cast<T*>(dk), static_cast<T*>(dv));
  if (keys != cudaSuccess) return keys;
  return launch<QueryTiles<T, kDim>>(query_grad_kernel<T, kDim>, a.q_len, a.batch * a.heads, stream,
                                     a, threshold, qt, kt, vt, gt, lt, dt, static_cast<T*>(dq));
}

// Calls f.template operator()<T, kDim>() for the dtype and the head size.
template <typename F>
cudaError_t dispatch(DType dtype, const AttentionArgs& a, F f) {
  const int dim = tile_dim(a.dim, a.value_dim);
  if (dtype == DType::f64) {
    if (dim == 32) return f.template operator()<double, 32>();
    if (dim == 64) return f.template operator()<double, 64>();
  } else if (dtype == DType::f32) {
    if (dim == 32) return f.template operator()<float, 32>();
    if (dim == 64) return f.template operator()<float, 64>();
    if (dim == kMaxDim) return f.template operator()<float, kMaxDim>();
  }
  return cudaErrorInvalidValue;  // tiled_attention_fits said no
}

}  // namespace

bool tiled_attention_fits(DType dtype, int64_t dim, int64_t value_dim) {
  const int d = tile_dim(dim, value_dim);
  if (d == 0 || (dtype != DType::f32 && dtype != DType::f64)) return false;
  if (dtype == DType::f64 && d > 64) return false;  // 128-wide f64 tiles exceed any GPU's memory
  const size_t need = dtype == DType::f64 ? largest_tiles<double>(d) : largest_tiles<float>(d);
  return need <= static_cast<size_t>(max_shared_bytes());
}

cudaError_t launch_attention_forward(DType dtype, const AttentionArgs& a, const void* q,
                                     const void* k, const void* v, void* out, void* lse,
                                     cudaStream_t stream) {
  return dispatch(dtype, a, [&]<typename T, int kDim>() {
    return forward<T, kDim>(a, q, k, v, out, lse, stream);
  });
}

cudaError_t launch_attention_backward(DType dtype, const AttentionArgs& a, const void* q,
                                      const void* k, const void* v, const void* gout,
                                      const void* lse, const void* row_dot, void* dq, void* dk,
                                      void* dv, cudaStream_t stream) {
  return dispatch(dtype, a, [&]<typename T, int kDim>() {
    return backward<T, kDim>(a, q, k, v, gout, lse, row_dot, dq, dk, dv, stream);
  });
}

}  // namespace relpos::cuda
