// complex_mul kernel: a thread per position, (ar + i ai)(br ± i bi) as on the CPU.
#include "core/cuda/complex_mul_kernels.h"
#include "core/cuda/elementwise.cuh"

namespace relpos::cuda {

namespace {

template <typename T>
__global__ void complex_mul_kernel(StridedArgs<3> pos, int64_t pair_a, int64_t pair_b,
                                   bool conj_b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < pos.n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[3];
    element_offsets(pos, i, off);
    const T* a = static_cast<const T*>(pos.data[1]) + off[1];
    const T* b = static_cast<const T*>(pos.data[2]) + off[2];
    T* o = static_cast<T*>(pos.data[0]) + off[0];
    const T ar = a[0], ai = a[pair_a], br = b[0], bi = conj_b ? -b[pair_b] : b[pair_b];
    o[0] = ar * br - ai * bi;
    o[1] = ar * bi + ai * br;
  }
}

}  // namespace

cudaError_t launch_complex_mul(DType dtype, const StridedArgs<3>& positions, int64_t pair_a,
                               int64_t pair_b, bool conj_b, cudaStream_t stream) {
  if (positions.n == 0) return cudaSuccess;
  if (dtype == DType::f64)
    complex_mul_kernel<double>
        <<<grid_for(positions.n), kThreads, 0, stream>>>(positions, pair_a, pair_b, conj_b);
  else
    complex_mul_kernel<float>
        <<<grid_for(positions.n), kThreads, 0, stream>>>(positions, pair_a, pair_b, conj_b);
  return cudaGetLastError();
}

}  // namespace relpos::cuda
