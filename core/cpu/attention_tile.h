// The pieces of core/cpu/attention.cpp's tiles: the problem's shape and visibility rules
// (Problem), the position term's band of table rows and its GEMMs, the blocking of a row, the
// online softmax's row operations and a row's dropout factors. Shapes and equations are in
// attention.cpp's header.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cpu/blas.h"
#include "core/cpu/philox_words.h"
#include "core/cpu/vec_math.h"
#include "core/ops.h"
#include "core/philox.h"

namespace relpos::cpu::attention_tile {

constexpr int64_t kQueryTile = 128;
constexpr int64_t kKeyTile = 256;

// The rows of an operand [B, H, L, W] (or a table [H or 1, T, W]: batch stride 0) with unit
// stride along W: q, k, v, out and their gradients may be views, such as heads split from
// [B, L, H·W], which the GEMMs read with their row stride as leading dimension.
template <typename T>
struct HeadRows {
  T* data = nullptr;
  int64_t heads = 1, batch_stride = 0, head_stride = 0, row_stride = 0, width = 0;

  HeadRows() = default;
  explicit HeadRows(const Tensor& x)
      : data(x.data<T>()),
        heads(x.size(-3)),
        batch_stride(x.dim() == 4 ? x.stride(0) : 0),
        head_stride(x.stride(-3)),
        row_stride(x.stride(-2)),
        width(x.size(-1)) {}
  // Row i of (example, head) bh.
  T* row(int64_t bh, int64_t i) const {
    return data + bh / heads * batch_stride + bh % heads * head_stride + i * row_stride;
  }
  // The GEMMs' leading dimension: the row stride (the op passes no overlapping rows), at least
  // the width as BLAS requires (a single row may have any stride).
  int ld() const { return static_cast<int>(std::max<int64_t>({1, width, row_stride})); }
};

template <typename T>
struct Problem {
  int64_t batch, heads, q_len, k_len, dim, value_dim;
  T scale;
  const uint8_t* key_mask;  // [B, Lk] or nullptr
  bool causal;
  int64_t window;
  double dropout;
  uint64_t seed, offset;
  HeadRows<T> rel_query;  // [B, H, Lq, R], data nullptr without the position term (ops.h)
  HeadRows<T> rel_key;    // [H or 1, rel_max - rel_min + 1, R]
  int64_t rel_dim;        // R
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
        rel_query(spec.rel_query.defined() ? HeadRows<T>(spec.rel_query) : HeadRows<T>()),
        rel_key(spec.rel_key.defined() ? HeadRows<T>(spec.rel_key) : HeadRows<T>()),
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
  bool has_position_term() const { return rel_query.data != nullptr; }
  // Scratch for the position term's band of one tile: [rows, rows + cols - 1] at most.
  int64_t band_scratch() const {
    return has_position_term() ? tile_rows() * (tile_rows() + tile_cols()) : 0;
  }
  // The table row of distance δ (ops.h AttentionSpec::rel_key).
  int64_t rel_row(int64_t delta) const { return std::clamp(delta, rel_min, rel_max) - rel_min; }
  // Row `row` of head bh's table [rel_max - rel_min + 1, R].
  const T* rel_table(int64_t bh, int64_t row) const {
    return rel_key.row(rel_tables == 1 ? 0 : bh % heads, row);
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

// Where tile row r's pairs read the band: key column c has distance δ = top - c and reads the
// band's column rel_row(δ) - first, which is `high` for c < begin (δ clamped to rel_max),
// diagonal - c for begin <= c < end, and `low` for c >= end (δ clamped to rel_min).
struct BandRow {
  int64_t begin, end, high, diagonal, low;
};
template <typename T>
BandRow band_row(const Problem<T>& p, const Band& band, int64_t i, int64_t j0, int64_t n) {
  const int64_t top = i + p.rel_offset - j0;  // δ of key j0
  const int64_t begin = std::clamp<int64_t>(top - p.rel_max, 0, n);
  const int64_t end = std::clamp<int64_t>(top - p.rel_min + 1, begin, n);
  return {begin, end, p.rel_max - p.rel_min - band.first, top - p.rel_min - band.first,
          -band.first};
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
       p.scale, p.rel_query.row(bh, i0), p.rel_query.ld(), p.rel_table(bh, band.first),
       p.rel_key.ld(), T(0), G, static_cast<int>(band.count));
  for (int64_t r = 0; r < rows; ++r) {
    const BandRow b = band_row(p, band, i0 + r, j0, n);
    T* s = S + r * ld_s;
    const T* g = G + r * band.count;
    for (int64_t c = 0; c < b.begin; ++c) s[c] += g[b.high];
#pragma omp simd
    for (int64_t c = b.begin; c < b.end; ++c) s[c] += g[b.diagonal - c];
    for (int64_t c = b.end; c < n; ++c) s[c] += g[b.low];
  }
}

// The position term's gradients from the tile's dS (dL/d logit, before the scale): summed into
// the band, dG [rows, band], then d rel_query += scale dG·T_band and this (example, head)'s
// part of d rel_key, [B, H, T, R], gets scale dGᵀ·RQ in its band rows.
template <typename T>
void position_term_grads(const Problem<T>& p, int64_t bh, int64_t i0, int64_t rows, int64_t j0,
                         int64_t n, const T* dS, int64_t ld_s, T* dG,
                         const HeadRows<T>& d_rel_query, T* d_rel_key) {
  const Band band = band_of(p, i0, rows, j0, n);
  const int64_t R = p.rel_dim, table_rows = p.rel_max - p.rel_min + 1;
  std::fill(dG, dG + rows * band.count, T(0));
  for (int64_t r = 0; r < rows; ++r) {  // in the order of c: the clamped columns sum in it
    const BandRow b = band_row(p, band, i0 + r, j0, n);
    const T* ds = dS + r * ld_s;
    T* g = dG + r * band.count;
    for (int64_t c = 0; c < b.begin; ++c) g[b.high] += ds[c];
#pragma omp simd
    for (int64_t c = b.begin; c < b.end; ++c) g[b.diagonal - c] += ds[c];
    for (int64_t c = b.end; c < n; ++c) g[b.low] += ds[c];
  }
  const int m = static_cast<int>(rows), nb = static_cast<int>(band.count);
  gemm(false, false, m, static_cast<int>(R), nb, p.scale, dG, nb, p.rel_table(bh, band.first),
       p.rel_key.ld(), T(1), d_rel_query.row(bh, i0), d_rel_query.ld());
  gemm(true, false, nb, static_cast<int>(R), m, p.scale, dG, nb, p.rel_query.row(bh, i0),
       p.rel_query.ld(), T(1), d_rel_key + (bh * table_rows + band.first) * R,
       static_cast<int>(std::max<int64_t>(1, R)));
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

// s: query i's scaled scores against keys j0..j0+n-1; -inf where the pair is blocked: the
// columns outside the causal range [lo, hi), then those the key mask drops.
template <typename T>
void block_row(const Problem<T>& p, const uint8_t* mask, int64_t i, int64_t j0, int64_t n, T* s) {
  const int64_t lo = std::clamp<int64_t>(p.first_key(i) - j0, 0, n);
  const int64_t hi = std::clamp<int64_t>(p.end_key(i) - j0, lo, n);
  const T blocked = -std::numeric_limits<T>::infinity();
  std::fill(s, s + lo, blocked);
  std::fill(s + hi, s + n, blocked);
  if (mask == nullptr) return;
  const uint8_t* m = mask + j0;
#pragma omp simd
  for (int64_t c = lo; c < hi; ++c) s[c] = m[c] != 0 ? s[c] : blocked;
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
  const KeepTest test = keep_test(p.dropout);
  const T kept = test.passing_kept ? static_cast<T>(1.0 / (1.0 - p.dropout)) : T(0);
  const auto first = static_cast<uint64_t>((bh * p.q_len + i) * p.k_len + j0);
  const uint64_t first_block = first / 4, skip = first % 4;
  philox_words(p.seed, p.offset + first_block, static_cast<int64_t>((skip + n + 3) / 4), words);
  const uint32_t* w = words + skip;
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) keep[c] = w[c] >= test.least ? kept : T(0);
}

template <typename T>
void scale_row(T* x, int64_t n, T factor) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) x[c] *= factor;
}

}  // namespace relpos::cpu::attention_tile
