// The definitions of emulated_attention.h, included by the source of each element type: the
// dispatch of core/cuda/attention_launches.cuh with the kernels of S alone instantiated.
#pragma once

#include <type_traits>

#include "core/cuda/attention_launches.cuh"
#include "emulated_attention.h"
#include "emulator.h"

namespace relpos::cuda_emulation {

// Starts a kernel on the emulator: the launcher of attention_launches.cuh. The kernels' shared
// memory, `smem` (core/cuda/attention_tiles.cuh), is defined by test_attention_kernels.cpp.
struct EmulatedLauncher {
  template <typename... Params, typename... Args>
  cudaError_t operator()(void (*kernel)(Params...), size_t bytes, dim3 grid, unsigned threads,
                         Args... args) const {
    launch(grid, threads, cuda::attention_tiles::smem, bytes, [&] { kernel(args...); });
    return cudaSuccess;
  }
};

template <typename S>
cudaError_t attention_forward(const cuda::AttentionArgs& a, const void* q, const void* k,
                              const void* v, void* out, void* lse) {
  return cuda::tiled_attention::dispatch(dtype_of<S>(), a, [&]<typename T, int kDim, bool kRel>() {
    if constexpr (std::is_same_v<T, S>)
      return cuda::tiled_attention::forward<T, kDim, kRel>(EmulatedLauncher{}, a, q, k, v, out,
                                                           lse);
    else
      return cudaErrorInvalidValue;  // another type's kernels: never dispatched to here
  });
}

template <typename S>
cudaError_t attention_backward(const cuda::AttentionArgs& a, const void* q, const void* k,
                               const void* v, const void* gout, const void* lse,
                               const void* row_dot, const cuda::AttentionGradBuffers& grads) {
  return cuda::tiled_attention::dispatch(dtype_of<S>(), a, [&]<typename T, int kDim, bool kRel>() {
    if constexpr (std::is_same_v<T, S>)
      return cuda::tiled_attention::backward<T, kDim, kRel>(EmulatedLauncher{}, a, q, k, v, gout,
                                                            lse, row_dot, grads);
    else
      return cudaErrorInvalidValue;
  });
}

}  // namespace relpos::cuda_emulation

// Instantiates both for S in the including source.
#define RELPOS_EMULATED_ATTENTION(S)                                                            \
  template cudaError_t relpos::cuda_emulation::attention_forward<S>(                            \
      const relpos::cuda::AttentionArgs&, const void*, const void*, const void*, void*, void*); \
  template cudaError_t relpos::cuda_emulation::attention_backward<S>(                           \
      const relpos::cuda::AttentionArgs&, const void*, const void*, const void*, const void*,   \
      const void*, const void*, const relpos::cuda::AttentionGradBuffers&)
