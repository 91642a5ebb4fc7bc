// The launch order of the tiled attention kernels (attention_kernels.cuh,
// attention_rel_key_kernels.cuh), written once and generic over a launcher: a CUDA stream in
// attention_kernels.cu, the CPU emulator in tests/cuda_emulation.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/cuda/attention_grad_kernels.cuh"
#include "core/cuda/attention_kernels.cuh"
#include "core/cuda/attention_rel_key_kernels.cuh"

namespace relpos::cuda::tiled_attention {

// Each kernel is started by launcher(kernel, shared bytes, grid, threads, arguments...).

// The head size the kernels are instantiated for: the smallest of 32, 64, 128 >= every head size
// (0: none). With the position term, and for bf16, only 32 and 64 are instantiated (tiles with the
// term at 128 would exceed any GPU's shared memory).
inline int tile_dim(int64_t dim, int64_t value_dim, int64_t rel_dim) {
  const int64_t need = std::max({dim, value_dim, rel_dim});
  for (int d : {32, 64, kMaxDim})
    if (need <= d) return rel_dim > 0 && d == kMaxDim ? 0 : d;
  return 0;
}

// Calls f.template operator()<S, kDim, kRel>() for the dtype, the head size and the position term.
template <typename F>
cudaError_t dispatch(DType dtype, const AttentionArgs& a, F f) {
  const int dim = tile_dim(a.dim, a.value_dim, a.rel_dim);
  if (dtype == DType::bf16) {
    const bool rel = a.rel_dim > 0;
    if (dim == 32)
      return rel ? f.template operator()<bf16, 32, true>()
                 : f.template operator()<bf16, 32, false>();
    if (dim == 64)
      return rel ? f.template operator()<bf16, 64, true>()
                 : f.template operator()<bf16, 64, false>();
  } else if (a.rel_dim > 0) {
    if (dtype == DType::f64 && dim == 32) return f.template operator()<double, 32, true>();
    if (dtype == DType::f32 && dim == 32) return f.template operator()<float, 32, true>();
    if (dtype == DType::f32 && dim == 64) return f.template operator()<float, 64, true>();
  } else if (dtype == DType::f64) {
    if (dim == 32) return f.template operator()<double, 32, false>();
    if (dim == 64) return f.template operator()<double, 64, false>();
  } else if (dtype == DType::f32) {
    if (dim == 32) return f.template operator()<float, 32, false>();
    if (dim == 64) return f.template operator()<float, 64, false>();
    if (dim == kMaxDim) return f.template operator()<float, kMaxDim, false>();
  }
  return cudaErrorInvalidValue;  // tiled_attention_fits said no
}

// A grid of (batch·heads, row tiles) blocks.
inline dim3 grid_of(const AttentionArgs& a, int64_t row_tiles) {
  return dim3(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>(row_tiles));
}
inline int64_t tiles_of_rows(int64_t rows) {
  return (rows + kTile - 1) / kTile;
}
inline int64_t diagonals_of(const AttentionArgs& a) {
  return tiles_of_rows(a.q_len) + tiles_of_rows(a.k_len) - 1;
}

// The shared memory of each kernel (the dK/dV kernel has G's halves in its own tiles, but for
// bf16).
template <typename S, int kDim, bool kRel>
constexpr size_t forward_bytes() {
  return shared_bytes<ForwardTiles<S, kDim>, kRel, S, kDim>();
}
template <typename S, int kDim, bool kRel>
constexpr size_t key_grad_bytes() {
  return shared_bytes < KeyTiles<S, kDim>, kRel, S, kDim, kTensorCores<S> ? 2 : 0 > ();
}
template <typename S, int kDim, bool kRel>
constexpr size_t query_grad_bytes() {
  return shared_bytes<QueryTiles<S, kDim>, kRel, S, kDim>();
}
template <typename S, int kDim>
constexpr size_t rel_key_band_bytes() {
  return shared_bytes<DiagonalTiles<S, kDim>, true, S, kDim, kDiagonalScoreTiles<S>>();
}

template <typename S, int kDim, bool kRel, typename Launcher>
cudaError_t forward(const Launcher& launch, const AttentionArgs& a, const void* q, const void* k,
                    const void* v, void* out, void* lse) {
  return launch(forward_kernel<S, kDim, kRel>, forward_bytes<S, kDim, kRel>(),
                grid_of(a, tiles_of_rows(a.q_len)), kThreads, a, keep_threshold(a.dropout),
                static_cast<const S*>(q), static_cast<const S*>(k), static_cast<const S*>(v),
                static_cast<S*>(out), static_cast<Compute<S>*>(lse));
}

template <typename S, int kDim, bool kRel, typename Launcher>
cudaError_t backward(const Launcher& launch, const AttentionArgs& a, const void* q, const void* k,
                     const void* v, const void* gout, const void* lse, const void* row_dot,
                     const AttentionGradBuffers& grads) {
  using T = Compute<S>;
  const uint64_t threshold = keep_threshold(a.dropout);
  const auto* qt = static_cast<const S*>(q);
  const auto* kt = static_cast<const S*>(k);
  const auto* vt = static_cast<const S*>(v);
  const auto* gt = static_cast<const S*>(gout);
  const auto* lt = static_cast<const T*>(lse);
  const auto* dt = static_cast<const T*>(row_dot);
  cudaError_t status = launch(key_grad_kernel<S, kDim, kRel>, key_grad_bytes<S, kDim, kRel>(),
                              grid_of(a, tiles_of_rows(a.k_len)), kThreads, a, threshold, qt, kt,
                              vt, gt, lt, dt, static_cast<S*>(grads.dk), static_cast<S*>(grads.dv));
  if (status != cudaSuccess) return status;
  status = launch(query_grad_kernel<S, kDim, kRel>, query_grad_bytes<S, kDim, kRel>(),
                  grid_of(a, tiles_of_rows(a.q_len)), kThreads, a, threshold, qt, kt, vt, gt, lt,
                  dt, static_cast<S*>(grads.dq), static_cast<S*>(grads.d_rel_query));
  if constexpr (kRel) {  // d rel_key: the band sums of every tile diagonal, then per table row
    if (status != cudaSuccess) return status;
    T* part = static_cast<T*>(grads.scratch);
    const int64_t diagonals = diagonals_of(a);
    status = launch(rel_key_band_kernel<S, kDim>, rel_key_band_bytes<S, kDim>(),
                    grid_of(a, diagonals), kThreads, a, threshold, qt, kt, vt, gt, lt, dt, part);
    if (status != cudaSuccess) return status;
    constexpr unsigned kSumThreads = 256;
    const int64_t outputs = a.batch * a.heads * (a.rel_max - a.rel_min + 1) * a.rel_dim;
    status =
        launch(rel_key_sum_kernel<T>, size_t{0},
               dim3(static_cast<unsigned>((outputs + kSumThreads - 1) / kSumThreads)), kSumThreads,
               a, static_cast<const T*>(part), diagonals, static_cast<T*>(grads.d_rel_key));
  }
  return status;
}

// The elements of AttentionGradBuffers::scratch (attention_kernels.h).
inline int64_t rel_key_scratch_of(const AttentionArgs& a) {
  return a.batch * a.heads * diagonals_of(a) * a.rel_dim * 2 * kTile;
}

}  // namespace relpos::cuda::tiled_attention
