// What the CPU kernels that call OpenBLAS share: one GEMM signature for f32 and f64, and the way
// relpos runs work in parallel around single-threaded GEMMs (OpenBLAS's own threading changes
// its blocking, and with it the rounding, with the thread count; core/cpu/matmul.cpp).
#pragma once

#include <cblas.h>
#include <omp.h>

#include <cstdint>
#include <cstring>

namespace relpos::cpu {

// Sets the [m, n] rows of c (row stride ldc) to +0.
template <typename T>
void clear_rows(T* c, int m, int n, int ldc) {
  if (ldc == n) {
    std::memset(c, 0, sizeof(T) * static_cast<size_t>(m) * static_cast<size_t>(n));
    return;
  }
  for (int i = 0; i < m; ++i) std::memset(c + static_cast<int64_t>(i) * ldc, 0, sizeof(T) * n);
}

// c = alpha op(a) op(b) + beta c, row-major: op(a) [m, k], op(b) [k, n], c [m, n].
// For beta = 0, OpenBLAS (0.3.21) clears c with one scalar store per element (its gemm_beta
// kernel took 5% of the LM demo's step); c is cleared here with memset instead and the product
// added onto it (beta = 1), which gives the same bits: the kernel adds its sums to a +0 either
// way. tests/core/test_matmul.cpp compares the two.
inline void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  if (beta == 0.0f && m > 0 && n > 0) {
    clear_rows(c, m, n, ldc);
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc) {
  if (beta == 0.0 && m > 0 && n > 0) {
    clear_rows(c, m, n, ldc);
    beta = 1.0;
  }
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Runs block(t) for t < tasks with OpenBLAS single-threaded. Its OpenMP build sizes its own team
// from omp_get_max_threads() unless called inside an active parallel region, so each caller of a
// block sets 1 for itself (the setting belongs to the calling thread and is put back).
// With a BLAS that is not thread-safe (RELPOS_BLAS_NOT_THREAD_SAFE: Debian's serial OpenBLAS, in
// the clang builds) the blocks run one after another.
template <typename Block>
void run_blocks(int64_t tasks, bool parallel, const Block& block) {
  const int threads = omp_get_max_threads();
#if defined(RELPOS_BLAS_NOT_THREAD_SAFE)
  parallel = false;
#endif
  if (parallel && threads > 1) {
#pragma omp parallel
    {
      omp_set_num_threads(1);
#pragma omp for schedule(static)
      for (int64_t t = 0; t < tasks; ++t) block(t);
    }
    return;
  }
  omp_set_num_threads(1);
  for (int64_t t = 0; t < tasks; ++t) block(t);
  omp_set_num_threads(threads);
}

}  // namespace relpos::cpu
