// Cross-entropy fused with log_softmax, as core/cpu/cross_entropy.cpp: per row of logits the max,
// the sum of exp(x - max) in T, then loss = log(sum) - (x[t] - max) or the gradient
// row_grad * (exp(x - max) / sum - onehot(t)). One warp per row up to 1024 classes, else a block.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda/cross_entropy_kernels.h"
#include "core/cuda/warp_reduce.cuh"

namespace relpos::cuda {

namespace {

constexpr int kThreads = 256;  // per block
constexpr int kRowWarps = kThreads / kWarpSize;
constexpr int64_t kMaxWarpRow = 1024;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The threads that share a row: a warp, or the whole block.
template <bool kBlock>
struct Group {
  __device__ static int64_t row() {
    return kBlock ? int64_t{blockIdx.x} : blockIdx.x * int64_t{kRowWarps} + threadIdx.x / kWarpSize;
  }
  __device__ static int rank() { return kBlock ? threadIdx.x : threadIdx.x % kWarpSize; }
  __device__ static int size() { return kBlock ? blockDim.x : kWarpSize; }
  template <typename T, typename Merge>
  __device__ static T all_reduce(T v, Merge merge) {
    if constexpr (kBlock)
      return block_all_reduce(v, merge);
    else
      return warp_all_reduce(v, merge);
  }
};

// logits: [N, C]; out: losses [N] (forward) or dlogits [N, C] (kBackward).
template <typename T, typename TI, bool kBlock, bool kBackward>
__global__ void cross_entropy_kernel(const T* logits, const TI* target, int64_t t_stride,
                                     int64_t ignore, const T* row_grad, int64_t g_stride, T* out,
                                     int64_t N, int64_t C, unsigned long long* bad_row) {
  using G = Group<kBlock>;
  const int64_t n = G::row();
  if (n >= N) return;  // the whole group leaves together
  const int tid = G::rank(), nt = G::size();
  const int64_t t = static_cast<int64_t>(target[n * t_stride]);
  const bool ignored = t == ignore, bad = !ignored && (t < 0 || t >= C);
  if (bad && tid == 0) atomicMin(bad_row, static_cast<unsigned long long>(n));
  if (ignored || bad) {  // uniform over the group: it depends on n only
    if constexpr (kBackward)
      for (int64_t c = tid; c < C; c += nt) out[n * C + c] = T(0);
    else if (tid == 0)
      out[n] = T(0);
    return;
  }
  const T* row = logits + n * C;  // row: [C]
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t c = tid; c < C; c += nt) m = FmaxOp{}(m, row[c]);
  m = G::all_reduce(m, FmaxOp{});
  T sum = 0;
  for (int64_t c = tid; c < C; c += nt) sum += std::exp(row[c] - m);
  sum = G::all_reduce(sum, AddOp{});
  if constexpr (kBackward) {
    const T g = row_grad[n * g_stride];
    const T scale = g / sum;  // row_grad * softmax = scale * exp(x - max)
    for (int64_t c = tid; c < C; c += nt) {
      T v = scale * std::exp(row[c] - m);
      if (c == t) v -= g;
      out[n * C + c] = v;
    }
  } else if (tid == 0) {
    out[n] = std::log(sum) - (row[t] - m);
  }
}

template <typename T, typename TI, bool kBackward>
void launch_typed(const T* logits, const TI* target, int64_t t_stride, int64_t ignore,
                  const T* row_grad, int64_t g_stride, T* out, int64_t N, int64_t C,
                  unsigned long long* bad_row, cudaStream_t stream) {
  if (C <= kMaxWarpRow)
    cross_entropy_kernel<T, TI, false, kBackward>
        <<<static_cast<unsigned>(ceil_div(N, kRowWarps)), kThreads, 0, stream>>>(
            logits, target, t_stride, ignore, row_grad, g_stride, out, N, C, bad_row);
  else
    cross_entropy_kernel<T, TI, true, kBackward><<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
        logits, target, t_stride, ignore, row_grad, g_stride, out, N, C, bad_row);
}

// Calls f(TypeTag<T>{}, TypeTag<TI>{}) for the logits' and the target's C++ types.
template <typename F>
void visit_types(DType dtype, DType target_dtype, F&& f) {
  auto with_target = [&](auto tag) {
    if (target_dtype == DType::i32)
      f(tag, TypeTag<int32_t>{});
    else
      f(tag, TypeTag<int64_t>{});
  };
  if (dtype == DType::f64)
    with_target(TypeTag<double>{});
  else
    with_target(TypeTag<float>{});
}

}  // namespace

cudaError_t launch_cross_entropy(DType dtype, DType target_dtype, const void* logits,
                                 const void* target, int64_t t_stride, int64_t ignore_index,
                                 void* losses, int64_t N, int64_t C, unsigned long long* bad_row,
                                 cudaStream_t stream) {
  if (N == 0) return cudaSuccess;
  visit_types(dtype, target_dtype, [&](auto tag, auto itag) {
    using T = typename decltype(tag)::type;
    using TI = typename decltype(itag)::type;
    launch_typed<T, TI, false>(static_cast<const T*>(logits), static_cast<const TI*>(target),
                               t_stride, ignore_index, nullptr, 0, static_cast<T*>(losses), N, C,
                               bad_row, stream);
  });
  return cudaGetLastError();
}

cudaError_t launch_cross_entropy_backward(DType dtype, DType target_dtype, const void* logits,
                                          const void* target, int64_t t_stride,
                                          int64_t ignore_index, const void* row_grad,
                                          int64_t g_stride, void* dlogits, int64_t N, int64_t C,
                                          unsigned long long* bad_row, cudaStream_t stream) {
  if (N == 0) return cudaSuccess;
  visit_types(dtype, target_dtype, [&](auto tag, auto itag) {
    using T = typename decltype(tag)::type;
    using TI = typename decltype(itag)::type;
    launch_typed<T, TI, true>(static_cast<const T*>(logits), static_cast<const TI*>(target),
                              t_stride, ignore_index, static_cast<const T*>(row_grad), g_stride,
                              static_cast<T*>(dlogits), N, C, bad_row, stream);
  });
  return cudaGetLastError();
}

}  // namespace relpos::cuda
