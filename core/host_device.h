// RELPOS_HOST_DEVICE marks math that both the CPU loops and the CUDA kernels compile.
#pragma once

#if defined(__CUDACC__)
#define RELPOS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define RELPOS_HOST_DEVICE inline
#endif
