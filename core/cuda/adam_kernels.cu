// The Adam update in one grid-stride kernel: core/adam_math.h's element update, compiled with
// --fmad=false (core/CMakeLists.txt) so nvcc fuses nothing and the bits equal the CPU's.
#include <algorithm>

#include "core/cuda/adam_kernels.h"

namespace relpos::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

template <typename T>
__global__ void adam_update_kernel(AdamScalars<T> s, const T* p, const T* g, const T* m, const T* v,
                                   T* p_out, T* m_out, T* v_out, int64_t n) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += stride)
    adam_element(s, p[i], g[i], m[i], v[i], p_out[i], m_out[i], v_out[i]);
}

}  // namespace

template <typename T>
cudaError_t launch_adam_update(const AdamScalars<T>& s, const T* p, const T* g, const T* m,
                               const T* v, T* p_out, T* m_out, T* v_out, int64_t n,
                               cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const auto blocks = static_cast<unsigned>(std::min(kMaxBlocks, (n + kThreads - 1) / kThreads));
  adam_update_kernel<T><<<blocks, kThreads, 0, stream>>>(s, p, g, m, v, p_out, m_out, v_out, n);
  return cudaGetLastError();
}

template cudaError_t launch_adam_update<float>(const AdamScalars<float>&, const float*,
                                               const float*, const float*, const float*, float*,
                                               float*, float*, int64_t, cudaStream_t);
template cudaError_t launch_adam_update<double>(const AdamScalars<double>&, const double*,
                                                const double*, const double*, const double*,
                                                double*, double*, double*, int64_t, cudaStream_t);

}  // namespace relpos::cuda
