// cuBLAS, opened on first use rather than linked. Loading libcublas and the libcublasLt it needs
// (about 600 MB of code on CUDA 13) relocates and touches some 200 MB: 0.6 s and 217 MB of
// memory at the start of every process, `relpos --version` and CPU runs included. The entry
// points relpos calls are resolved once, from the library of the major version it was compiled
// against.
#pragma once

#include <cublas_v2.h>

namespace relpos::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  // The C entry point (C++ also sees an inline overload taking a cudaDataType compute type).
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int m, int n, int k, const void* alpha, const void* a,
                                            cudaDataType a_type, int lda, long long stride_a,
                                            const void* b, cudaDataType b_type, int ldb,
                                            long long stride_b, const void* beta, void* c,
                                            cudaDataType c_type, int ldc, long long stride_c,
                                            int batch, cublasComputeType_t, cublasGemmAlgo_t);
  const char* (*status_string)(cublasStatus_t);  // null before cuBLAS 11.6
};

// libcublas.so.<CUBLAS_VER_MAJOR>, opened on the first call (once, thread-safe). A library that
// cannot be opened or lacks an entry point is a relpos::Error naming it and the loader's reason.
const CublasLibrary& cublas();

}  // namespace relpos::cuda
