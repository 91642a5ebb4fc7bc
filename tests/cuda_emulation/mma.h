// Stands in for the toolkit's mma.h in tests/cuda_emulation: the WMMA operations the attention
// kernels use (fill, load, mma, store of 16x16x16 bf16 fragments with f32 sums). On a GPU they are
// collective over a warp and a fragment's elements are spread over its lanes in an unspecified
// order; here lane 0 holds whole matrices and does the work when it reaches the call, which is
// all the kernels can observe (they only load, multiply and store fragments). The calls do not
// wait for the other lanes: the kernel's own barriers must order a fragment's loads and stores
// with the other threads' shared-memory accesses, and a missing one shows.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <type_traits>

namespace nvcuda::wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

// A [kRows, kCols] matrix: A is M x K, B is K x N, the accumulator M x N.
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int kRows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
  float x[kRows * kCols];
};

namespace detail {
inline bool warp_leader() {
  return threadIdx.x % 32 == 0;
}
}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, float value) {
  if (detail::warp_leader())
    for (float& v : f.x) v = value;
}

// Element (r, c) at p[r ldm + c] (row_major) or p[c ldm + r] (col_major).
template <typename Use, int M, int N, int K, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, __nv_bfloat16, Layout>& f, const __nv_bfloat16* p,
                      unsigned ldm) {
  using F = fragment<Use, M, N, K, __nv_bfloat16, Layout>;
  if (!detail::warp_leader()) return;
  for (int r = 0; r < F::kRows; ++r)
    for (int c = 0; c < F::kCols; ++c)
      f.x[r * F::kCols + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d,
              const fragment<matrix_a, M, N, K, __nv_bfloat16, LayoutA>& a,
              const fragment<matrix_b, M, N, K, __nv_bfloat16, LayoutB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  if (!detail::warp_leader()) return;
  float out[M * N];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float sum = c.x[m * N + n];
      for (int k = 0; k < K; ++k) sum += a.x[m * K + k] * b.x[k * N + n];
      out[m * N + n] = sum;
    }
  for (int i = 0; i < M * N; ++i) d.x[i] = out[i];
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm,
                       layout_t layout) {
  if (!detail::warp_leader()) return;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      (layout == mem_row_major ? p[m * ldm + n] : p[n * ldm + m]) = f.x[m * N + n];
}

}  // namespace nvcuda::wmma
