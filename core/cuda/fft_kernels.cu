// FFT helper kernels: the scaled, DC/Nyquist-cleaned copy of a spectrum that cuFFT's C2R
// transform consumes (and overwrites).
#include "core/cuda/elementwise.cuh"
#include "core/cuda/fft_kernels.h"

namespace relpos::cuda {

namespace {

// X, spec: [rows, h, 2]; one thread per complex bin.
template <typename T>
__global__ void irfft_prepare_kernel(const T* X, T* spec, int64_t bins, int64_t h, bool even,
                                     T scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < bins;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t k = i % h;
    // A real signal's DC bin (and Nyquist bin, n even) is real: their imaginary parts are
    // ignored, as numpy, torch and the CPU kernel do.
    const bool real_bin = k == 0 || (even && k == h - 1);
    spec[2 * i] = X[2 * i] * scale;
    spec[2 * i + 1] = real_bin ? T(0) : X[2 * i + 1] * scale;
  }
}

}  // namespace

cudaError_t launch_irfft_prepare(DType dtype, const void* X, void* spec, int64_t rows, int64_t n,
                                 cudaStream_t stream) {
  const int64_t h = n / 2 + 1, bins = rows * h;
  if (bins == 0) return cudaSuccess;
  if (dtype == DType::f64)
    irfft_prepare_kernel<<<grid_for(bins), kThreads, 0, stream>>>(
        static_cast<const double*>(X), static_cast<double*>(spec), bins, h, n % 2 == 0,
        1.0 / static_cast<double>(n));
  else
    irfft_prepare_kernel<<<grid_for(bins), kThreads, 0, stream>>>(
        static_cast<const float*>(X), static_cast<float*>(spec), bins, h, n % 2 == 0,
        1.0f / static_cast<float>(n));
  return cudaGetLastError();
}

}  // namespace relpos::cuda
