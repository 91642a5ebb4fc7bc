// CPU batched matmul: one OpenBLAS GEMM per batch. Strided and transposed views go to BLAS as
// they are (a column-major matrix is a row-major one with the transpose flag flipped); only a
// matrix with no unit inner stride is copied.
#include <cblas.h>

#include <climits>

#include "core/backend.h"

namespace relpos::cpu {

namespace {

// One [B, r, c] operand as BLAS sees it: `data` holds the matrices (x itself, or a copy),
// row-major with leading dimension ld, or column-major (col_major) with leading dimension ld.
struct GemmOperand {
  Tensor data;
  bool col_major = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;  // 0 when the batch is broadcast
};

// Leading dimension of an r x c matrix with strides (sr, sc) read as row-major, or -1 when it
// is not row-major with a leading dimension BLAS accepts (>= c, within int range).
int64_t row_major_ld(int64_t r, int64_t c, int64_t sr, int64_t sc) {
  if (c > 1 && sc != 1) return -1;
  const int64_t min_ld = std::max<int64_t>(c, 1);
  const int64_t ld = r > 1 ? sr : min_ld;  // one row: any ld >= c will do
  return ld >= min_ld && ld <= INT_MAX ? ld : -1;
}

// x: [B, r, c].
GemmOperand prepare(const Tensor& x) {
  const int64_t r = x.size(1), c = x.size(2);
  const int64_t batch_stride = x.size(0) > 1 ? x.stride(0) : 0;
  if (const int64_t ld = row_major_ld(r, c, x.stride(1), x.stride(2)); ld > 0)
    return {x, false, ld, batch_stride};
  if (const int64_t ld = row_major_ld(c, r, x.stride(2), x.stride(1)); ld > 0)
    return {x, true, ld, batch_stride};
  // Neither inner stride is 1: copy, a single matrix when the batch is broadcast.
  const int64_t dense_ld = std::max<int64_t>(c, 1);
  if (batch_stride == 0) return {x.select(0, 0).contiguous().unsqueeze(0), false, dense_ld, 0};
  return {x.contiguous(), false, dense_ld, r * c};
}

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
  const GemmOperand pa = prepare(a), pb = prepare(b);
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
