// Launchers of the FFT helper kernels (fft_kernels.cu); the cuFFT calls are in fft.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype_id.h"

namespace relpos::cuda {

// The input of a C2R transform of length n: spec = X / n, with the imaginary parts of bin 0 and
// (n even) of the Nyquist bin n/2 set to 0. X, spec: [rows, h, 2] contiguous, h = n/2 + 1; dtype
// f32 or f64.
cudaError_t launch_irfft_prepare(DType dtype, const void* X, void* spec, int64_t rows, int64_t n,
                                 cudaStream_t stream);

}  // namespace relpos::cuda
