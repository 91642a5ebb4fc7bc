// Index kernels: the id range check, gather (index_select is a gather with a broadcast index) and
// scatter_add (index_add likewise), one thread per index position over strided operands.
#include "core/cuda/elementwise.cuh"
#include "core/cuda/index_kernels.h"

namespace relpos::cuda {

namespace {

template <typename F>
decltype(auto) visit_index(DType t, F&& f) {
  if (t == DType::i32) return f(TypeTag<int32_t>{});
  return f(TypeTag<int64_t>{});
}

template <typename I>
__device__ __forceinline__ int64_t id_at(const StridedArgs<3>& a, const int64_t (&off)[3]) {
  return static_cast<int64_t>(static_cast<const I*>(a.data[1])[off[1]]);
}

template <typename I>
__global__ void check_ids_kernel(StridedArgs<1> a, int64_t bound, unsigned long long* status) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < a.n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[1];
    element_offsets(a, i, off);
    const auto id = static_cast<int64_t>(static_cast<const I*>(a.data[0])[off[0]]);
    if (id < 0 || id >= bound) {
      atomicAdd(&status[0], 1ULL);
      atomicMin(&status[1], static_cast<unsigned long long>(i));  // i: row-major position
    }
  }
}

template <typename T, typename I>
__global__ void gather_kernel(StridedArgs<3> a, int64_t dim_stride, int64_t bound) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < a.n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    element_offsets(a, i, off);
    const int64_t id = id_at<I>(a, off);
    if (id < 0 || id >= bound) continue;  // reported by check_ids_kernel
    static_cast<T*>(a.data[0])[off[0]] = static_cast<const T*>(a.data[2])[off[2] + id * dim_stride];
  }
}

template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  atomicAdd(p, v);  // float, double, int32
}
__device__ __forceinline__ void atomic_add(int64_t* p, int64_t v) {
  // Two's complement: an unsigned add wraps to the same bits as the signed one.
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_add(uint8_t* p, uint8_t v) {
  // No byte atomics: compare-and-swap the aligned 32-bit word holding the byte.
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
  const unsigned int shift = static_cast<unsigned int>(address & 3) * 8;
  unsigned int old = *word, assumed = 0;
  do {
    assumed = old;
    const unsigned int sum = ((assumed >> shift) + v) & 0xFFu;
    old = atomicCAS(word, assumed, (assumed & ~(0xFFu << shift)) | (sum << shift));
  } while (assumed != old);
}

template <typename T, typename I>
__global__ void scatter_add_kernel(StridedArgs<3> a, int64_t dim_stride, int64_t bound) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < a.n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    element_offsets(a, i, off);
    const int64_t id = id_at<I>(a, off);
    if (id < 0 || id >= bound) continue;  // reported by check_ids_kernel
    atomic_add(static_cast<T*>(a.data[2]) + off[2] + id * dim_stride,
               static_cast<const T*>(a.data[0])[off[0]]);
  }
}

}  // namespace

cudaError_t launch_check_ids(DType index_dtype, const StridedArgs<1>& index, int64_t bound,
                             unsigned long long* status, cudaStream_t stream) {
  // status = {0, UINT64_MAX}
  if (cudaError_t e = cudaMemsetAsync(status, 0, sizeof(unsigned long long), stream);
      e != cudaSuccess)
    return e;
  if (cudaError_t e = cudaMemsetAsync(status + 1, 0xFF, sizeof(unsigned long long), stream);
      e != cudaSuccess)
    return e;
  if (index.n == 0) return cudaSuccess;
  visit_index(index_dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    check_ids_kernel<I><<<grid_for(index.n), kThreads, 0, stream>>>(index, bound, status);
  });
  return cudaGetLastError();
}

cudaError_t launch_gather(DType dtype, DType index_dtype, const StridedArgs<3>& a,
                          int64_t dim_stride, int64_t bound, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  visit_dtype(dtype, [&](auto t) {
    visit_index(index_dtype, [&](auto i) {
      using T = typename decltype(t)::type;
      using I = typename decltype(i)::type;
      gather_kernel<T, I><<<grid_for(a.n), kThreads, 0, stream>>>(a, dim_stride, bound);
    });
  });
  return cudaGetLastError();
}

cudaError_t launch_scatter_add(DType dtype, DType index_dtype, const StridedArgs<3>& a,
                               int64_t dim_stride, int64_t bound, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  visit_dtype(dtype, [&](auto t) {
    visit_index(index_dtype, [&](auto i) {
      using T = typename decltype(t)::type;
      using I = typename decltype(i)::type;
      scatter_add_kernel<T, I><<<grid_for(a.n), kThreads, 0, stream>>>(a, dim_stride, bound);
    });
  });
  return cudaGetLastError();
}

}  // namespace relpos::cuda
