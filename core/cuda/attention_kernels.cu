// Launchers of the tiled attention kernels (attention_kernels.cuh) on a CUDA stream, and whether
// an instantiation's tiles fit the device's shared memory.
#include <algorithm>
#include <cstdint>

#include "core/cuda/attention_kernels.h"
#include "core/cuda/attention_launches.cuh"

namespace relpos::cuda {

namespace {

using namespace tiled_attention;

// bf16 tiles need the tensor cores' bf16 mma.sync: compute capability 8.0 or later.
bool has_bf16_tensor_cores() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         major >= 8;
}

int max_shared_bytes() {
  int device = 0, bytes = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess)
    return 0;
  return bytes;
}

template <typename S, int kDim, bool kRel>
size_t largest_tiles() {
  const size_t kernels = std::max({forward_bytes<S, kDim, kRel>(), key_grad_bytes<S, kDim, kRel>(),
                                   query_grad_bytes<S, kDim, kRel>()});
  return kRel ? std::max(kernels, rel_key_band_bytes<S, kDim>()) : kernels;
}

template <typename S, bool kRel>
size_t largest_tiles(int dim) {
  if constexpr (kRel || kTensorCores<S>)
    return dim == 32 ? largest_tiles<S, 32, kRel>() : largest_tiles<S, 64, kRel>();
  else
    return dim == 32   ? largest_tiles<S, 32, false>()
           : dim == 64 ? largest_tiles<S, 64, false>()
                       : largest_tiles<S, kMaxDim, false>();
}

// Launches a kernel on the stream with `bytes` of dynamic shared memory (raising its limit past
// 48 KB): the launcher of attention_launches.cuh.
struct StreamLauncher {
  cudaStream_t stream;
  template <typename... Params, typename... Args>
  cudaError_t operator()(void (*kernel)(Params...), size_t bytes, dim3 grid, unsigned threads,
                         Args... args) const {
    const cudaError_t set = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (set != cudaSuccess) return set;
    kernel<<<grid, threads, bytes, stream>>>(args...);
    return cudaGetLastError();
  }
};

}  // namespace

bool tiled_attention_fits(DType dtype, int64_t dim, int64_t value_dim, int64_t rel_dim) {
  const int d = tile_dim(dim, value_dim, rel_dim);
  if (d == 0 || (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::bf16)) return false;
  // 128-wide f64 tiles (64-wide with the position term) exceed any GPU's shared memory; bf16 is
  // instantiated up to 64.
  if (dtype == DType::f64 && d > (rel_dim > 0 ? 32 : 64)) return false;
  if (dtype == DType::bf16 && (d > 64 || !has_bf16_tensor_cores())) return false;
  size_t need = 0;
  if (dtype == DType::f64)
    need = rel_dim > 0 ? largest_tiles<double, true>(d) : largest_tiles<double, false>(d);
  else if (dtype == DType::bf16)
    need = rel_dim > 0 ? largest_tiles<bf16, true>(d) : largest_tiles<bf16, false>(d);
  else
    need = rel_dim > 0 ? largest_tiles<float, true>(d) : largest_tiles<float, false>(d);
  return need <= static_cast<size_t>(max_shared_bytes());
}

int64_t rel_key_scratch_elements(const AttentionArgs& a) {
  return rel_key_scratch_of(a);
}

cudaError_t launch_attention_forward(DType dtype, const AttentionArgs& a, const void* q,
                                     const void* k, const void* v, void* out, void* lse,
                                     cudaStream_t stream) {
  return dispatch(dtype, a, [&]<typename S, int kDim, bool kRel>() {
    return forward<S, kDim, kRel>(StreamLauncher{stream}, a, q, k, v, out, lse);
  });
}

cudaError_t launch_attention_backward(DType dtype, const AttentionArgs& a, const void* q,
                                      const void* k, const void* v, const void* gout,
                                      const void* lse, const void* row_dot,
                                      const AttentionGradBuffers& grads, cudaStream_t stream) {
  return dispatch(dtype, a, [&]<typename S, int kDim, bool kRel>() {
    return backward<S, kDim, kRel>(StreamLauncher{stream}, a, q, k, v, gout, lse, row_dot, grads);
  });
}

}  // namespace relpos::cuda
