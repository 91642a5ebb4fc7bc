// Launcher of the Adam update kernel (adam_kernels.cu); the host glue is adam.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/adam_math.h"

namespace relpos::cuda {

// (p_out, m_out, v_out)[i] = adam_element(s, p[i], g[i], m[i], v[i]) for i < n; all contiguous.
template <typename T>
cudaError_t launch_adam_update(const AdamScalars<T>& s, const T* p, const T* g, const T* m,
                               const T* v, T* p_out, T* m_out, T* v_out, int64_t n,
                               cudaStream_t stream);

}  // namespace relpos::cuda
