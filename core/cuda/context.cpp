#include "core/cuda/context.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/cublas_library.h"

namespace relpos {

bool cuda_available() {
  return cuda::device_count() > 0;
}

int cuda_device_count() {
  return cuda::device_count();
}

namespace cuda {

namespace {
constexpr int kMaxDevices = 16;
}  // namespace

const char* cublas_status_name(cublasStatus_t s) {
  const auto status_string = cublas().status_string;
  if (status_string != nullptr) return status_string(s);
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "cuBLAS error";
}

const char* cufft_result_name(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS:
      return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN:
      return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED:
      return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_VALUE:
      return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR:
      return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED:
      return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED:
      return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE:
      return "CUFFT_INVALID_SIZE";
    default:
      return "cuFFT error";
  }
}

int device_count() {
  static const int count = [] {
    int n = 0;
    // No driver or no GPU: report zero devices instead of failing.
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

DeviceContext::DeviceContext(int device_index) : index(device_index) {
  DeviceGuard guard(Device::cuda(device_index));
  RELPOS_CUDA_CHECK("cuda context", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  RELPOS_CUBLAS_CHECK("cuda context", cuda::cublas().create(&cublas));
  RELPOS_CUBLAS_CHECK("cuda context", cuda::cublas().set_stream(cublas, stream));
  RELPOS_CUDNN_CHECK("cuda context", cudnnCreate(&cudnn));
  RELPOS_CUDNN_CHECK("cuda context", cudnnSetStream(cudnn, stream));
}

DeviceContext::~DeviceContext() {
  // Errors at exit are ignored: the process is going away and the driver may already be.
  if (cudnn) cudnnDestroy(cudnn);
  if (cublas) cuda::cublas().destroy(cublas);
  if (stream) cudaStreamDestroy(stream);
}

DeviceContext& context(Device device) {
  RELPOS_CHECK(device.is_cuda() && device.index >= 0 && device.index < device_count(), "cuda",
               "no such device {} ({} CUDA device(s) visible)", device.str(), device_count());
  static std::array<std::unique_ptr<DeviceContext>, kMaxDevices> contexts;
  static std::array<std::once_flag, kMaxDevices> once;
  std::call_once(once[device.index],
                 [&] { contexts[device.index] = std::make_unique<DeviceContext>(device.index); });
  return *contexts[device.index];
}

DeviceGuard::DeviceGuard(Device device) {
  RELPOS_CUDA_CHECK("cuda", cudaGetDevice(&previous_));
  if (previous_ != device.index) RELPOS_CUDA_CHECK("cuda", cudaSetDevice(device.index));
}

DeviceGuard::~DeviceGuard() {
  cudaSetDevice(previous_);
}

void synchronize(Device device) {
  RELPOS_CUDA_CHECK("synchronize", cudaStreamSynchronize(stream_of(device)));
}

}  // namespace cuda
}  // namespace relpos
