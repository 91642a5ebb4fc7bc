// CUDA batched matmul: one cuBLAS strided-batched GEMM. Operands reach cuBLAS without copies
// whenever core/cpu/matmul.cpp would pass them to BLAS as they are (row-major or column-major
// with an acceptable leading dimension); row-major C = op(A) op(B) runs as C^T = op(B)^T op(A)^T.
// bf16 operands go to cublasGemmStridedBatchedEx with f32 accumulation (out bf16 or f32).
#include <climits>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/cublas_library.h"
#include "core/gemm_operand.h"

namespace relpos::cuda {

namespace {

cublasOperation_t op_of(bool trans) {
  return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// Column-major C (m x n, ldc) = op(A) op(B) for `batch` matrices at the given strides.
cublasStatus_t gemm_batched(cublasHandle_t h, bool ta, bool tb, int m, int n, int k, const float* a,
                            int lda, int64_t sa, const float* b, int ldb, int64_t sb, float* c,
                            int ldc, int64_t sc, int batch) {
  const float one = 1.0f, zero = 0.0f;
  return cublas().sgemm_strided_batched(h, op_of(ta), op_of(tb), m, n, k, &one, a, lda, sa, b, ldb,
                                        sb, &zero, c, ldc, sc, batch);
}
cublasStatus_t gemm_batched(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
                            const double* a, int lda, int64_t sa, const double* b, int ldb,
                            int64_t sb, double* c, int ldc, int64_t sc, int batch) {
  const double one = 1.0, zero = 0.0;
  return cublas().dgemm_strided_batched(h, op_of(ta), op_of(tb), m, n, k, &one, a, lda, sa, b, ldb,
                                        sb, &zero, c, ldc, sc, batch);
}

// bf16 operands, f32 accumulation, C in bf16 or f32 (c_type).
cublasStatus_t gemm_batched_bf16(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
                                 const void* a, int lda, int64_t sa, const void* b, int ldb,
                                 int64_t sb, void* c, cudaDataType c_type, int ldc, int64_t sc,
                                 int batch) {
  const float one = 1.0f, zero = 0.0f;
  return cublas().gemm_strided_batched_ex(h, op_of(ta), op_of(tb), m, n, k, &one, a, CUDA_R_16BF,
                                          lda, sa, b, CUDA_R_16BF, ldb, sb, &zero, c, c_type, ldc,
                                          sc, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
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
  const GemmOperand pa = gemm_operand(a), pb = gemm_operand(b);
  // The stored matrix is op(x) or its transpose; a column-major one flips the flag (row-major
  // terms, as on the CPU).
  const bool ta = trans_a != pa.col_major, tb = trans_b != pb.col_major;
  // TF32 only when asked for: by default f32 GEMMs round like the CPU's (fp32 FMA).
  RELPOS_CUBLAS_CHECK("matmul",
                      cublas().set_math_mode(ctx.cublas, allow_tf32() && out.dtype() == DType::f32
                                                             ? CUBLAS_TF32_TENSOR_OP_MATH
                                                             : CUBLAS_DEFAULT_MATH));
  if (a.dtype() == DType::bf16) {  // same layout argument as below; out bf16 or f32
    RELPOS_CUBLAS_CHECK(
        "matmul", gemm_batched_bf16(ctx.cublas, tb, ta, static_cast<int>(n), static_cast<int>(m),
                                    static_cast<int>(k), pb.data.raw_data(),
                                    static_cast<int>(pb.ld), pb.batch_stride, pa.data.raw_data(),
                                    static_cast<int>(pa.ld), pa.batch_stride, out.raw_data(),
                                    out.dtype() == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F,
                                    static_cast<int>(n), m * n, static_cast<int>(batch)));
    return;
  }
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
