// Per-device CUDA state: one stream on which every relpos op of that device runs (so the caching
// allocator can reuse a freed block at once), and the cuBLAS and cuDNN handles bound to it. All
// created lazily on first use and destroyed at exit (RAII).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/device.h"

namespace relpos::cuda {

struct DeviceContext {
  int index = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  DeviceContext(int device_index);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
};

DeviceContext& context(Device device);
inline cudaStream_t stream_of(Device device) {
  return context(device).stream;
}

// Makes `device` current for the scope (kernel launches and cudaMalloc go to it).
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace relpos::cuda
