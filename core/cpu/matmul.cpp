// CPU batched matmul: one OpenBLAS GEMM per batch. Strided and transposed views go to BLAS as
// they are (a column-major matrix is a row-major one with the transpose flag flipped); only a
// matrix with no unit inner stride is copied.
#include <cblas.h>

#include <climits>

#include "core/backend.h"
#include "core/gemm_operand.h"

namespace relpos::cpu {

namespace {

void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
          double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& out) {
  // a: [B, M, K] (or [B, K, M]), b: [B, K, N] (or [B, N, K]), out: [B, M, N] contiguous.
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2);
  const int64_t k = trans_a ? a.size(1) : a.size(2);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // empty sum: BLAS may reject ld = 0, and the answer is all zeros
    fill(out, 0);
    return;
  }
  RELPOS_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "matmul",
               "matrix dims M={} N={} K={} exceed BLAS's 32-bit int range", m, n, k);
  const GemmOperand pa = gemm_operand(a), pb = gemm_operand(b);
  // The stored matrix is op(a) or its transpose; a column-major one flips the flag.
  const bool ta = trans_a != pa.col_major, tb = trans_b != pb.col_major;
  dispatch_floating(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa_data = pa.data.data<T>();
    const T* pb_data = pb.data.data<T>();
    T* po = out.data<T>();  // po: [B, M, N]
    for (int64_t i = 0; i < batch; ++i)
      gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
           pa_data + i * pa.batch_stride, static_cast<int>(pa.ld), pb_data + i * pb.batch_stride,
           static_cast<int>(pb.ld), po + i * m * n, static_cast<int>(n));
  });
}

}  // namespace relpos::cpu
