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
// few tiles per task, so memory grows with L·D, not L². The tiles' pieces: attention_tile.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "core/cpu/attention_tile.h"
#include "core/cpu/blas.h"
#include "core/cpu/vec_math.h"
#include "core/ops.h"

namespace relpos::cpu {

namespace {

using namespace attention_tile;

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

// The operands of the forward: q, k, v, out as rows (any strides along B, H, L), lse [B, H, Lq].
template <typename T>
struct Operands {
  HeadRows<T> q, k, v, out;
  T* lse;
};

// Rows [i0, i0 + rows) of head bh: out and lse.
template <typename T>
void forward_task(const Problem<T>& p, const Operands<T>& x, int64_t bh, int64_t i0,
                  std::vector<T>& scratch) {
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
  const T* Q = x.q.row(bh, i0);
  T* O = x.out.row(bh, i0);
  const int ldo = x.out.ld();
  const uint8_t* mask = p.mask_of(bh);
  const T minus_inf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) std::fill(O + r * ldo, O + r * ldo + Dv, T(0));
  std::fill(m, m + rows, minus_inf);
  std::fill(l, l + rows, T(0));
  const int64_t j_end = p.end_key(i0 + rows - 1);
  for (int64_t j0 = p.first_key(i0); j0 < j_end; j0 += TC) {
    const int64_t n = std::min(TC, j_end - j0);
    gemm(false, true, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(D), p.scale, Q,
         x.q.ld(), x.k.row(bh, j0), x.k.ld(), T(0), S, static_cast<int>(TC));
    if (p.has_position_term()) add_position_term(p, bh, i0, rows, j0, n, S, TC, G);
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
      if (alpha != T(1)) scale_row(O + r * ldo, Dv, alpha);
      if (p.dropout > 0) {
        dropout_row(p, bh, i0 + r, j0, n, keep, words.data());
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) s[c] *= keep[c];
      }
    }
    gemm(false, false, static_cast<int>(rows), static_cast<int>(Dv), static_cast<int>(n), T(1), S,
         static_cast<int>(TC), x.v.row(bh, j0), x.v.ld(), T(1), O, ldo);
  }
  T* L = x.lse + bh * p.q_len + i0;
  for (int64_t r = 0; r < rows; ++r) {
    if (l[r] > T(0)) {
      scale_row(O + r * ldo, Dv, T(1) / l[r]);
      L[r] = m[r] + std::log(l[r]);
    } else {  // no visible key: zeros
      std::fill(O + r * ldo, O + r * ldo + Dv, T(0));
      L[r] = minus_inf;
    }
  }
}

// The tensors of the backward: rows (any strides along B, H, L) but lse [B, H, Lq] and
// d_rel_key [B, H, T, R].
template <typename T>
struct Gradients {
  HeadRows<T> gout, q, k, v, out;
  const T* lse;
  HeadRows<T> dq, dk, dv;
  HeadRows<T> d_rel_query;  // the position term's (data nullptr without it)
  T* d_rel_key;
};

// Zeroes rows [0, len) of head bh.
template <typename T>
void zero_rows(const HeadRows<T>& x, int64_t bh, int64_t len) {
  for (int64_t i = 0; i < len; ++i) std::fill(x.row(bh, i), x.row(bh, i) + x.width, T(0));
}

// Zeroes head bh's gradients (they are summed tile by tile) and sets Drow[i] = dO_i·O_i.
template <typename T>
void start_gradients(const Problem<T>& p, const Gradients<T>& g, int64_t bh, T* Drow) {
  zero_rows(g.dq, bh, p.q_len);
  zero_rows(g.dk, bh, p.k_len);
  zero_rows(g.dv, bh, p.k_len);
  if (p.has_position_term()) {
    zero_rows(g.d_rel_query, bh, p.q_len);
    const int64_t table = (p.rel_max - p.rel_min + 1) * p.rel_dim;
    std::fill(g.d_rel_key + bh * table, g.d_rel_key + (bh + 1) * table, T(0));
  }
  for (int64_t i = 0; i < p.q_len; ++i) {
    const T *dO = g.gout.row(bh, i), *O = g.out.row(bh, i);
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t d = 0; d < p.value_dim; ++d) dot += dO[d] * O[d];
    Drow[i] = dot;
  }
}

// Head bh: its rows of dq, dk and dv.
template <typename T>
void backward_task(const Problem<T>& p, const Gradients<T>& g, int64_t bh,
                   std::vector<T>& scratch) {
  const int64_t D = p.dim, Dv = p.value_dim, Lq = p.q_len;
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
  const T* L = g.lse + bh * Lq;
  start_gradients(p, g, bh, Drow);
  const uint8_t* mask = p.mask_of(bh);
  const int ld_tile = static_cast<int>(TC);
  for (int64_t i0 = 0; i0 < Lq; i0 += TR) {
    const int64_t rows = std::min(TR, Lq - i0);
    const int64_t j_end = p.end_key(i0 + rows - 1);
    for (int64_t j0 = p.first_key(i0); j0 < j_end; j0 += TC) {
      const int64_t n = std::min(TC, j_end - j0);
      const int m_rows = static_cast<int>(rows), n_cols = static_cast<int>(n);
      const T *Q = g.q.row(bh, i0), *K = g.k.row(bh, j0), *dO = g.gout.row(bh, i0);
      gemm(false, true, m_rows, n_cols, static_cast<int>(D), p.scale, Q, g.q.ld(), K, g.k.ld(),
           T(0), S, ld_tile);
      gemm(false, true, m_rows, n_cols, static_cast<int>(Dv), T(1), dO, g.gout.ld(),
           g.v.row(bh, j0), g.v.ld(), T(0), dP, ld_tile);
      if (p.has_position_term()) add_position_term(p, bh, i0, rows, j0, n, S, TC, G);
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
      gemm(true, false, n_cols, static_cast<int>(Dv), m_rows, T(1), weights, ld_tile, dO,
           g.gout.ld(), T(1), g.dv.row(bh, j0), g.dv.ld());
      gemm(false, false, m_rows, static_cast<int>(D), n_cols, p.scale, dP, ld_tile, K, g.k.ld(),
           T(1), g.dq.row(bh, i0), g.dq.ld());
      gemm(true, false, n_cols, static_cast<int>(D), m_rows, p.scale, dP, ld_tile, Q, g.q.ld(),
           T(1), g.dk.row(bh, j0), g.dk.ld());
      if (p.has_position_term())
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
    const Operands<T> x{HeadRows<T>(q), HeadRows<T>(k), HeadRows<T>(v), HeadRows<T>(out),
                        lse.data<T>()};
    run_blocks(tasks, tasks > 1, [&](int64_t t) {
      forward_task(p, x, t / tiles, (t % tiles) * kQueryTile, thread_scratch<T>());
    });
  });
}

void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out, const Tensor& lse, const AttentionSpec& spec,
                        const AttentionGrads& grads) {
  dispatch_floating(q.dtype(), "attention_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Problem<T> p(q, v, spec);
    const bool position = p.has_position_term();
    const Gradients<T> g{HeadRows<T>(gout),
                         HeadRows<T>(q),
                         HeadRows<T>(k),
                         HeadRows<T>(v),
                         HeadRows<T>(out),
                         lse.data<T>(),
                         HeadRows<T>(grads.dq),
                         HeadRows<T>(grads.dk),
                         HeadRows<T>(grads.dv),
                         position ? HeadRows<T>(grads.drel_query) : HeadRows<T>(),
                         position ? grads.drel_key.data<T>() : nullptr};
    const int64_t tasks = p.batch * p.heads;
    run_blocks(tasks, tasks > 1, [&](int64_t bh) { backward_task(p, g, bh, thread_scratch<T>()); });
  });
}

}  // namespace relpos::cpu
