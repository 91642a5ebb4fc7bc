// What the CPU kernels that call OpenBLAS share: one GEMM signature for f32 and f64, and the way
// relpos runs work in parallel around single-threaded GEMMs (OpenBLAS's own threading changes
// its blocking, and with it the rounding, with the thread count; core/cpu/matmul.cpp).
#pragma once

#include <cblas.h>
#include <omp.h>

#include <cstdint>

namespace relpos::cpu {

// c = alpha op(a) op(b) + beta c, row-major: op(a) [m, k], op(b) [k, n], c [m, n].
inline void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc) {
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
