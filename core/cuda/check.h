// Checks for every CUDA runtime, cuBLAS, cuFFT and cuDNN call: a failure throws relpos::Error
// naming the op, the call and the library's own error string.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <cufft.h>

#include "core/error.h"

namespace relpos::cuda {

const char* cublas_status_name(cublasStatus_t s);
const char* cufft_result_name(cufftResult r);

}  // namespace relpos::cuda

#define RELPOS_CUDA_CHECK(op, call)                                                   \
  do {                                                                                \
    const cudaError_t relpos_err = (call);                                            \
    if (relpos_err != cudaSuccess)                                                    \
      ::relpos::fail(op, "{} failed: {} ({})", #call, cudaGetErrorString(relpos_err), \
                     cudaGetErrorName(relpos_err));                                   \
  } while (0)

#define RELPOS_CUBLAS_CHECK(op, call)                                                            \
  do {                                                                                           \
    const cublasStatus_t relpos_st = (call);                                                     \
    if (relpos_st != CUBLAS_STATUS_SUCCESS)                                                      \
      ::relpos::fail(op, "{} failed: {}", #call, ::relpos::cuda::cublas_status_name(relpos_st)); \
  } while (0)

#define RELPOS_CUFFT_CHECK(op, call)                                                           \
  do {                                                                                         \
    const cufftResult relpos_r = (call);                                                       \
    if (relpos_r != CUFFT_SUCCESS)                                                             \
      ::relpos::fail(op, "{} failed: {}", #call, ::relpos::cuda::cufft_result_name(relpos_r)); \
  } while (0)

#define RELPOS_CUDNN_CHECK(op, call)                                             \
  do {                                                                           \
    const cudnnStatus_t relpos_s = (call);                                       \
    if (relpos_s != CUDNN_STATUS_SUCCESS)                                        \
      ::relpos::fail(op, "{} failed: {}", #call, cudnnGetErrorString(relpos_s)); \
  } while (0)

// After a kernel launch: reports launch-configuration errors at once, naming the op.
#define RELPOS_CUDA_LAUNCH_CHECK(op) RELPOS_CUDA_CHECK(op, cudaGetLastError())
