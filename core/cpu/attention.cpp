// CPU tiled attention (core/ops.h AttentionSpec; FlashAttention-2, Dao 2023, Algorithms 1-2).
// Forward, one task per (batch·head, query tile): for each key tile the query may see,
// S = scale Q·Kᵀ (one GEMM, the scale as its alpha), blocked pairs -inf, the running row maximum m
// and sum l updated (online softmax: O and l rescaled by exp(m_old - m_new)), O += P V (one GEMM);
// at the end O /= l and lse = m + log l. Backward, one task per batch·head (it owns its dK and dV
// rows): D_i = dO_i·O_i, then per tile P = exp(S - lse), dV += P̃ᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP -
// D), dQ += scale dS K, dK += scale dSᵀ Q, where P̃ and dP carry the forward's dropout mask. Causal
// tiles past a query tile's last visible key are never computed. A relative position term
// (AttentionSpec::rel_*) joins S by one more GEMM per tile against the band of table rows its
// distances read (add_position_term), its gradients by two (position_term_grads). Scratch is a
// few tiles per task, so memory grows with L·D, not L².
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "core/cpu/blas.h"
#include "core/cpu/philox_words.h"
#include "core/cpu/vec_math.h"
#include "core/ops.h"
#include "core/philox.h"

namespace relpos::cpu {

namespace {

constexpr int64_t kQueryTile = 128;
constexpr int64_t kKeyTile = 256;

// The calling thread's tile scratch, kept from call to call (a fresh one each call would be
// mapped and zeroed by the system every time): at most 3 tiles plus a row per query.
template <typename T>
std::vector<T>& thread_scratch() {
  thread_local std::vector<T> scratch;
  return scratch;
}

// The calling thread's scratch for the Philox words of one row of dropout.
inline std::vector<uint32_t>& thread_words() {
  thread_local std::vector<uint32_t> words;
  return words;
}

template <typename T>
struct Problem {
  int64_t batch, heads, q_len, k_len, dim, value_dim;
  T scale;
  const uint8_t* key_mask;  // [B, Lk] or nullptr
  bool causal;
  int64_t window;
  double dropout;
  uint64_t seed, offset;
  const T* rel_query;  // [B, H, Lq, R] or nullptr: the position term (ops.h AttentionSpec)
  const T* rel_key;    // [H or 1, rel_max - rel_min + 1, R]
  int64_t rel_dim;     // R
  int64_t rel_tables, rel_offset, rel_min, rel_max;

  Problem(const Tensor& q, const Tensor& v, const AttentionSpec& spec)
      : batch(q.size(0)),
        heads(q.size(1)),
        q_len(q.size(2)),
        k_len(v.size(2)),
        dim(q.size(3)),
        value_dim(v.size(3)),
        scale(static_cast<T>(spec.scale)),
        key_mask(spec.key_mask.defined() ? spec.key_mask.data<uint8_t>() : nullptr),
        causal(spec.causal),
        window(spec.window),
        dropout(spec.dropout),
        seed(spec.seed),
        offset(spec.offset),
        rel_query(spec.rel_query.defined() ? spec.rel_query.data<T>() : nullptr),
        rel_key(spec.rel_key.defined() ? spec.rel_key.data<T>() : nullptr),
        rel_dim(spec.rel_query.defined() ? spec.rel_query.size(3) : 0),
        rel_tables(spec.rel_key.defined() ? spec.rel_key.size(0) : 0),
        rel_offset(spec.rel_offset),
        rel_min(spec.rel_min),
        rel_max(spec.rel_max) {}

  // Query i may see keys in [first_key(i), end_key(i)); the key mask then decides.
  int64_t first_key(int64_t i) const {
    return causal && window > 0 ? std::max<int64_t>(0, i + k_len - q_len - window + 1) : 0;
  }
  int64_t end_key(int64_t i) const {
    return causal ? std::clamp<int64_t>(i + k_len - q_len + 1, 0, k_len) : k_len;
  }
  const uint8_t* mask_of(int64_t bh) const {
    return key_mask != nullptr ? key_mask + (bh / heads) * k_len : nullptr;
  }
  // The tile shape, no larger than the problem (a short sequence gets small scratch).
  int64_t tile_rows() const { return std::clamp<int64_t>(q_len, 1, kQueryTile); }
  int64_t tile_cols() const { return std::clamp<int64_t>(k_len, 1, kKeyTile); }
  int ld_dim() const { return static_cast<int>(std::max<int64_t>(1, dim)); }
  int ld_value() const { return static_cast<int>(std::max<int64_t>(1, value_dim)); }
  int ld_rel() const { return static_cast<int>(std::max<int64_t>(1, rel_dim)); }
  // Scratch for the position term's band of one tile: [rows, rows + cols - 1] at most.
  int64_t band_scratch() const {
    return rel_query != nullptr ? tile_rows() * (tile_rows() + tile_cols()) : 0;
  }
  // The table row of distance δ (ops.h AttentionSpec::rel_key).
  int64_t rel_row(int64_t delta) const { return std::clamp(delta, rel_min, rel_max) - rel_min; }
  // Head bh's table: [rel_max - rel_min + 1, R].
  const T* rel_table(int64_t bh) const {
    return rel_key + (rel_tables == 1 ? 0 : bh % heads) * (rel_max - rel_min + 1) * rel_dim;
  }
};

// The table rows [first, first + count) that the pairs of tile rows [i0, i0 + rows) and keys
// [j0, j0 + n) read: their distances δ = i + rel_offset - j span rows + n - 1 values, clamped.
struct Band {
  int64_t first, count;
};
template <typename T>
Band band_of(const Problem<T>& p, int64_t i0, int64_t rows, int64_t j0, int64_t n) {
  const int64_t first = p.rel_row(i0 + p.rel_offset - (j0 + n - 1));
  const int64_t last = p.rel_row(i0 + rows - 1 + p.rel_offset - j0);
  return {first, last - first + 1};
}

// Calls f(r, c, g) for every pair (r, c) of the tile, g the pair's column in the band.
template <typename T, typename F>
void for_band_pairs(const Problem<T>& p, const Band& band, int64_t i0, int64_t rows, int64_t j0,
                    int64_t n, F f) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t top = i0 + r + p.rel_offset - j0;  // δ of key j0
    for (int64_t c = 0; c < n; ++c) f(r, c, p.rel_row(top - c) - band.first);
  }
}

// S[r][c] += scale rel_query_{i0+r}·rel_key[row(δ)] over the tile (Transformer-XL's terms
// (b) + (d), Shaw's and skew's score bias): one GEMM against the band of table rows the tile
// reads, G = scale RQ·T_bandᵀ [rows, band], then each score picks its row's column (the
// rel-shift done by index arithmetic).
template <typename T>
void add_position_term(const Problem<T>& p, int64_t bh, int64_t i0, int64_t rows, int64_t j0,
                       int64_t n, T* S, int64_t ld_s, T* G) {
  const Band band = band_of(p, i0, rows, j0, n);
  const int64_t R = p.rel_dim;
  gemm(false, true, static_cast<int>(rows), static_cast<int>(band.count), static_cast<int>(R),
       p.scale, p.rel_query + (bh * p.q_len + i0) * R, p.ld_rel(), p.rel_table(bh) + band.first * R,
       p.ld_rel(), T(0), G, static_cast<int>(band.count));
  for_band_pairs(p, band, i0, rows, j0, n, [&](int64_t r, int64_t c, int64_t g) {
    S[r * ld_s + c] += G[r * band.count + g];
  });
}

// The position term's gradients from the tile's dS (dL/d logit, before the scale): summed into
// the band, dG [rows, band], then d rel_query += scale dG·T_band and this (example, head)'s
// part of d rel_key, [B, H, T, R], gets scale dGᵀ·RQ in its band rows.
template <typename T>
void position_term_grads(const Problem<T>& p, int64_t bh, int64_t i0, int64_t rows, int64_t j0,
                         int64_t n, const T* dS, int64_t ld_s, T* dG, T* d_rel_query,
                         T* d_rel_key) {
  const Band band = band_of(p, i0, rows, j0, n);
  const int64_t R = p.rel_dim, table_rows = p.rel_max - p.rel_min + 1;
  std::fill(dG, dG + rows * band.count, T(0));
  for_band_pairs(p, band, i0, rows, j0, n, [&](int64_t r, int64_t c, int64_t g) {
    dG[r * band.count + g] += dS[r * ld_s + c];
  });
  const int m = static_cast<int>(rows), nb = static_cast<int>(band.count);
  gemm(false, false, m, static_cast<int>(R), nb, p.scale, dG, nb, p.rel_table(bh) + band.first * R,
       p.ld_rel(), T(1), d_rel_query + (bh * p.q_len + i0) * R, p.ld_rel());
  gemm(true, false, nb, static_cast<int>(R), m, p.scale, dG, nb,
       p.rel_query + (bh * p.q_len + i0) * R, p.ld_rel(), T(1),
       d_rel_key + (bh * table_rows + band.first) * R, p.ld_rel());
}

// Whether every pair of rows [i0, i0 + rows) x keys [j0, j0 + n) is visible, so the tile needs
// no blocking pass.
template <typename T>
bool tile_visible(const Problem<T>& p, const uint8_t* mask, int64_t i0, int64_t rows, int64_t j0,
                  int64_t n) {
  if (p.first_key(i0 + rows - 1) > j0 || p.end_key(i0) < j0 + n) return false;
  if (mask != nullptr)
    for (int64_t c = 0; c < n; ++c)
      if (mask[j0 + c] == 0) return false;
  return true;
}

// s: query i's scaled scores against keys j0..j0+n-1; -inf where the pair is blocked.
template <typename T>
void block_row(const Problem<T>& p, const uint8_t* mask, int64_t i, int64_t j0, int64_t n, T* s) {
  const int64_t lo = p.first_key(i) - j0, hi = p.end_key(i) - j0;  // visible columns [lo, hi)
  const T blocked = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < n; ++c)
    if (c < lo || c >= hi || (mask != nullptr && mask[j0 + c] == 0)) s[c] = blocked;
}

// The largest of s[0..n) and `at_least`.
template <typename T>
RELPOS_SIMD_CLONES T row_max(const T* s, int64_t n, T at_least) {
  return std::max(at_least, max_of(s, n));
}

// s[c] = exp(s[c] - shift); returns their sum.
template <typename T>
RELPOS_SIMD_CLONES T exp_shifted_sum(T* s, int64_t n, T shift) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c) {
    s[c] = exp_fast(s[c] - shift);
    sum += s[c];
  }
  return sum;
}

// From a row of scores s and of dP = dO·v_j: the weights P = exp(s - lse) into s and
// dS = P (dP - D) into dp (FlashAttention-2, Algorithm 2, lines 13-16).
template <typename T>
RELPOS_SIMD_CLONES void weights_and_score_grads(T* s, T* dp, int64_t n, T lse, T d) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    s[c] = exp_fast(s[c] - lse);
    dp[c] = s[c] * (dp[c] - d);
  }
}

// keep[c] = 1/(1 - dropout) where weight (bh, i, j0 + c) is kept and 0 where it is dropped: the
// element of dropout_mask({B, H, Lq, Lk}) drawn from the same (seed, offset). `words` is scratch
// for the Philox words of the row (n + 8 of them).
template <typename T>
void dropout_row(const Problem<T>& p, int64_t bh, int64_t i, int64_t j0, int64_t n, T* keep,
                 uint32_t* words) {
  const T kept = static_cast<T>(1.0 / (1.0 - p.dropout));
  const uint64_t threshold = keep_threshold(p.dropout);
  const auto first = static_cast<uint64_t>((bh * p.q_len + i) * p.k_len + j0);
  const uint64_t first_block = first / 4, skip = first % 4;
  philox_words(p.seed, p.offset + first_block, static_cast<int64_t>((skip + n + 3) / 4), words);
  const uint32_t* w = words + skip;
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) keep[c] = w[c] >= threshold ? kept : T(0);
}

template <typename T>
void scale_row(T* x, int64_t n, T factor) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) x[c] *= factor;
}

// Rows [i0, i0 + rows) of head bh: out and lse.
template <typename T>
void forward_task(const Problem<T>& p, const T* q, const T* k, const T* v, T* out, T* lse,
                  int64_t bh, int64_t i0, std::vector<T>& scratch) {
  const int64_t rows = std::min(kQueryTile, p.q_len - i0), D = p.dim, Dv = p.value_dim;
  const int64_t TR = p.tile_rows(), TC = p.tile_cols();
  scratch.resize(TR * TC + TC + 2 * TR + p.band_scratch());
  std::vector<uint32_t>& words = thread_words();
  words.resize(static_cast<size_t>(TC + 8));
  T* S = scratch.data();  // [rows, TC]: scores, then weights
  T* keep = S + TR * TC;  // [TC]
  T* m = keep + TC;       // [rows] running maxima
  T* l = m + TR;          // [rows] running sums
  T* G = l + TR;          // [rows, band]: the position term
  const T* Q = q + (bh * p.q_len + i0) * D;
  const T* K = k + bh * p.k_len * D;
  const T* V = v + bh * p.k_len * Dv;
  T* O = out + (bh * p.q_len + i0) * Dv;
  const uint8_t* mask = p.mask_of(bh);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  std::fill(O, O + rows * Dv, T(0));
  std::fill(m, m + rows, minus_inf);
  std::fill(l, l + rows, T(0));
  const int64_t j_end = p.end_key(i0 + rows - 1);
  for (int64_t j0 = p.first_key(i0); j0 < j_end; j0 += TC) {
    const int64_t n = std::min(TC, j_end - j0);
    gemm(false, true, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(D), p.scale, Q,
         p.ld_dim(), K + j0 * D, p.ld_dim(), T(0), S, static_cast<int>(TC));
    if (p.rel_query != nullptr) add_position_term(p, bh, i0, rows, j0, n, S, TC, G);
    const bool visible = tile_visible(p, mask, i0, rows, j0, n);
    for (int64_t r = 0; r < rows; ++r) {
      T* s = S + r * TC;
      if (!visible) block_row(p, mask, i0 + r, j0, n, s);
      const T m_new = row_max(s, n, m[r]);
      if (m_new == minus_inf) {  // nothing visible yet: these weights are 0
        std::fill(s, s + n, T(0));
        continue;
      }
      const T sum = exp_shifted_sum(s, n, m_new);
      const T alpha = exp_fast(m[r] - m_new);  // 0 when m[r] was -inf
      l[r] = l[r] * alpha + sum;
      m[r] = m_new;
      if (alpha != T(1)) scale_row(O + r * Dv, Dv, alpha);
      if (p.dropout > 0) {
        dropout_row(p, bh, i0 + r, j0, n, keep, words.data());
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) s[c] *= keep[c];
      }
    }
    gemm(false, false, static_cast<int>(rows), static_cast<int>(Dv), static_cast<int>(n), T(1), S,
         static_cast<int>(TC), V + j0 * Dv, p.ld_value(), T(1), O, p.ld_value());
  }
  T* L = lse + bh * p.q_len + i0;
  for (int64_t r = 0; r < rows; ++r) {
    if (l[r] > T(0)) {
      scale_row(O + r * Dv, Dv, T(1) / l[r]);
      L[r] = m[r] + std::log(l[r]);
    } else {  // no visible key: zeros
      std::fill(O + r * Dv, O + (r + 1) * Dv, T(0));
      L[r] = minus_inf;
    }
  }
}

template <typename T>
struct Gradients {
  const T *gout, *q, *k, *v, *out, *lse;
  T *dq, *dk, *dv;
  T *d_rel_query, *d_rel_key;  // the position term's, or nullptr
};

// Zeroes head bh's gradients (they are summed tile by tile) and sets Drow[i] = dO_i·O_i.
template <typename T>
void start_gradients(const Problem<T>& p, const Gradients<T>& g, int64_t bh, T* Drow) {
  const int64_t D = p.dim, Dv = p.value_dim, Lq = p.q_len, Lk = p.k_len;
  std::fill(g.dq + bh * Lq * D, g.dq + (bh + 1) * Lq * D, T(0));
  std::fill(g.dk + bh * Lk * D, g.dk + (bh + 1) * Lk * D, T(0));
  std::fill(g.dv + bh * Lk * Dv, g.dv + (bh + 1) * Lk * Dv, T(0));
  if (p.rel_query != nullptr) {
    std::fill(g.d_rel_query + bh * Lq * p.rel_dim, g.d_rel_query + (bh + 1) * Lq * p.rel_dim, T(0));
    const int64_t table = (p.rel_max - p.rel_min + 1) * p.rel_dim;
    std::fill(g.d_rel_key + bh * table, g.d_rel_key + (bh + 1) * table, T(0));
  }
  const T* dO = g.gout + bh * Lq * Dv;
  const T* O = g.out + bh * Lq * Dv;
  for (int64_t i = 0; i < Lq; ++i) {
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t d = 0; d < Dv; ++d) dot += dO[i * Dv + d] * O[i * Dv + d];
    Drow[i] = dot;
  }
}

// Head bh: its rows of dq, dk and dv.
template <typename T>
void backward_task(const Problem<T>& p, const Gradients<T>& g, int64_t bh,
                   std::vector<T>& scratch) {
  const int64_t D = p.dim, Dv = p.value_dim, Lq = p.q_len, Lk = p.k_len;
  const int64_t TR = p.tile_rows(), TC = p.tile_cols();
  scratch.resize(3 * TR * TC + TC + Lq + p.band_scratch());
  std::vector<uint32_t>& words = thread_words();
  words.resize(static_cast<size_t>(TC + 8));
  T* S = scratch.data();     // [rows, TC]: scores, then P
  T* dP = S + TR * TC;       // [rows, TC]: dP, then dS
  T* kept = dP + TR * TC;    // [rows, TC]: P with the dropout mask applied
  T* keep = kept + TR * TC;  // [TC]
  T* Drow = keep + TC;       // [Lq] dO_i·O_i
  T* G = Drow + Lq;          // [rows, band]: the position term and its gradient
  const T* dO = g.gout + bh * Lq * Dv;
  const T* Q = g.q + bh * Lq * D;
  const T* K = g.k + bh * Lk * D;
  const T* V = g.v + bh * Lk * Dv;
  const T* L = g.lse + bh * Lq;
  T* dQ = g.dq + bh * Lq * D;
  T* dK = g.dk + bh * Lk * D;
  T* dV = g.dv + bh * Lk * Dv;
  start_gradients(p, g, bh, Drow);
  const uint8_t* mask = p.mask_of(bh);
  const int ld_tile = static_cast<int>(TC);
  for (int64_t i0 = 0; i0 < Lq; i0 += TR) {
    const int64_t rows = std::min(TR, Lq - i0);
    const int64_t j_end = p.end_key(i0 + rows - 1);
    for (int64_t j0 = p.first_key(i0); j0 < j_end; j0 += TC) {
      const int64_t n = std::min(TC, j_end - j0);
      const int m_rows = static_cast<int>(rows), n_cols = static_cast<int>(n);
      gemm(false, true, m_rows, n_cols, static_cast<int>(D), p.scale, Q + i0 * D, p.ld_dim(),
           K + j0 * D, p.ld_dim(), T(0), S, ld_tile);
      gemm(false, true, m_rows, n_cols, static_cast<int>(Dv), T(1), dO + i0 * Dv, p.ld_value(),
           V + j0 * Dv, p.ld_value(), T(0), dP, ld_tile);
      if (p.rel_query != nullptr) add_position_term(p, bh, i0, rows, j0, n, S, TC, G);
      const bool visible = tile_visible(p, mask, i0, rows, j0, n);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        T *s = S + r * TC, *dp = dP + r * TC, *pk = kept + r * TC;
        if (L[i] == -std::numeric_limits<T>::infinity()) {  // no visible key: no gradient
          std::fill(s, s + n, T(0));
          std::fill(dp, dp + n, T(0));
          std::fill(pk, pk + n, T(0));
          continue;
        }
        if (!visible) block_row(p, mask, i, j0, n, s);
        if (p.dropout > 0) {  // P̃ = P ∘ keep for dV; dP = (dO·v_j) ∘ keep
          dropout_row(p, bh, i, j0, n, keep, words.data());
#pragma omp simd
          for (int64_t c = 0; c < n; ++c) {
            pk[c] = exp_fast(s[c] - L[i]) * keep[c];
            dp[c] *= keep[c];
          }
        }
        weights_and_score_grads(s, dp, n, L[i], Drow[i]);
      }
      const T* weights = p.dropout > 0 ? kept : S;
      gemm(true, false, n_cols, static_cast<int>(Dv), m_rows, T(1), weights, ld_tile, dO + i0 * Dv,
           p.ld_value(), T(1), dV + j0 * Dv, p.ld_value());
      gemm(false, false, m_rows, static_cast<int>(D), n_cols, p.scale, dP, ld_tile, K + j0 * D,
           p.ld_dim(), T(1), dQ + i0 * D, p.ld_dim());
      gemm(true, false, n_cols, static_cast<int>(D), m_rows, p.scale, dP, ld_tile, Q + i0 * D,
           p.ld_dim(), T(1), dK + j0 * D, p.ld_dim());
      if (p.rel_query != nullptr)
        position_term_grads(p, bh, i0, rows, j0, n, dP, TC, G, g.d_rel_query, g.d_rel_key);
    }
  }
}

}  // namespace

bool attention_takes_bf16(int64_t, int64_t, const AttentionSpec&) {
  return false;  // the f32 kernels take their values (core/ops/attention.cpp)
}

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionSpec& spec,
               const Tensor& out, const Tensor& lse) {
  dispatch_floating(q.dtype(), "attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Problem<T> p(q, v, spec);
    const int64_t tiles = (p.q_len + kQueryTile - 1) / kQueryTile;
    const int64_t tasks = p.batch * p.heads * tiles;
    const T *qd = q.data<T>(), *kd = k.data<T>(), *vd = v.data<T>();
    T *od = out.data<T>(), *ld = lse.data<T>();
    run_blocks(tasks, tasks > 1, [&](int64_t t) {
      forward_task(p, qd, kd, vd, od, ld, t / tiles, (t % tiles) * kQueryTile, thread_scratch<T>());
    });
  });
}

void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const AttentionSpec& spec,
                        const AttentionGrads& grads) {
  dispatch_floating(q.dtype(), "attention_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Problem<T> p(q, v, spec);
    const bool position = p.rel_query != nullptr;
    const Gradients<T> g{gout.data<T>(),
                         q.data<T>(),
                         k.data<T>(),
                         v.data<T>(),
                         out.data<T>(),
                         lse.data<T>(),
                         grads.dq.data<T>(),
                         grads.dk.data<T>(),
                         grads.dv.data<T>(),
                         position ? grads.drel_query.data<T>() : nullptr,
                         position ? grads.drel_key.data<T>() : nullptr};
    const int64_t tasks = p.batch * p.heads;
    run_blocks(tasks, tasks > 1, [&](int64_t bh) { backward_task(p, g, bh, thread_scratch<T>()); });
  });
}

}  // namespace relpos::cpu
