// CUDA batched matmul: one cuBLAS strided-batched GEMM. Operands reach cuBLAS without copies
// whenever core/cpu/matmul.cpp would pass them to BLAS as they are (row-major or column-major
// with an acceptable leading dimension); row-major C = op(A) op(B) runs as C^T = op(B)^T op(A)^T.
#include <climits>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"

namespace relpos::cuda {

namespace {

// One [B, r, c] operand as cuBLAS sees it: `data` holds the matrices (x itself, or a copy),
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

// x: [B, r, c]. The same decisions as the CPU kernel, so both backends copy the same operands.
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

cublasOperation_t op_of(bool trans) {
  return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// Column-major C (m x n, ldc) = op(A) op(B) for `batch` matrices at the given strides.
cublasStatus_t gemm_batched(cublasHandle_t h, bool ta, bool tb, int m, int n, int k, const float* a,
                            int lda, int64_t sa, const float* b, int ldb, int64_t sb, float* c,
                            int ldc, int64_t sc, int batch) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemmStridedBatched(h, op_of(ta), op_of(tb), m, n, k, &one, a, lda, sa, b, ldb, sb,
                                   &zero, c, ldc, sc, batch);
}
cublasStatus_t gemm_batched(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
                            const double* a, int lda, int64_t sa, const double* b, int ldb,
                            int64_t sb, double* c, int ldc, int64_t sc, int batch) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemmStridedBatched(h, op_of(ta), op_of(tb), m, n, k, &one, a, lda, sa, b, ldb, sb,
                                   &zero, c, ldc, sc, batch);
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& out) {
  // a: [B, M, K] (or [B, K, M]), b: [B, K, N] (or [B, N, K]), out: [B, M, N] contiguous.
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2);
  const int64_t k = trans_a ? a.size(1) : a.size(2);
  if (batch == 0 || m == 0 || n == 0) return;
  DeviceGuard guard(out.device());
  DeviceContext& ctx = context(out.device());
  if (k == 0) {  // empty sum: cuBLAS rejects ld = 0, and the answer is all zeros
    RELPOS_CUDA_CHECK("matmul", cudaMemsetAsync(out.raw_data(), 0,
                                                out.numel() * dtype_size(out.dtype()), ctx.stream));
    return;
  }
  RELPOS_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && batch <= INT_MAX, "matmul",
               "matrix dims M={} N={} K={} (batch {}) exceed cuBLAS's 32-bit int range", m, n, k,
               batch);
  const GemmOperand pa = prepare(a), pb = prepare(b);
  // The stored matrix is op(x) or its transpose; a column-major one flips the flag (row-major
  // terms, as on the CPU).
  const bool ta = trans_a != pa.col_major, tb = trans_b != pb.col_major;
  // TF32 only when asked for: by default f32 GEMMs round like the CPU's (fp32 FMA).
  RELPOS_CUBLAS_CHECK("matmul",
                      cublasSetMathMode(ctx.cublas, allow_tf32() && out.dtype() == DType::f32
                                                        ? CUBLAS_TF32_TENSOR_OP_MATH
                                                        : CUBLAS_DEFAULT_MATH));
  dispatch_floating(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // cuBLAS reads a row-major matrix as its transpose, so the row-major product
    // out = op(a) op(b) is the column-major out^T = op(b)^T op(a)^T: b first, m and n swapped.
    RELPOS_CUBLAS_CHECK(
        "matmul", gemm_batched(ctx.cublas, tb, ta, static_cast<int>(n), static_cast<int>(m),
                               static_cast<int>(k), pb.data.template data<T>(),
                               static_cast<int>(pb.ld), pb.batch_stride, pa.data.template data<T>(),
                               static_cast<int>(pa.ld), pa.batch_stride, out.data<T>(),
                               static_cast<int>(n), m * n, static_cast<int>(batch)));
  });
}

}  // namespace relpos::cuda
