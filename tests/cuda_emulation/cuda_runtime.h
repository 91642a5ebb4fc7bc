// Stands in for the CUDA runtime header when relpos's kernel sources are compiled as host C++ by
// the tests of tests/cuda_emulation (and only there: it is first on their include path). The
// keywords become plain C++, the vector types and built-in indices are host values that the
// emulator (emulator.h) sets for each thread, and __syncthreads, __syncwarp and __shfl_xor_sync
// (and the WMMA calls of mma.h here) wait for the other threads of the block or warp, which run as
// fibers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__
#define __align__(bytes) __attribute__((aligned(bytes)))

struct float4 {
  float x, y, z, w;
};
struct double2 {
  double x, y;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
inline double2 make_double2(double x, double y) {
  return {x, y};
}

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
using cudaStream_t = struct CUstream_st*;

// The device math the kernels call, from the host library.
using std::exp2;
using std::fma;
using std::log2;
using std::max;
using std::min;

namespace relpos::cuda_emulation {

extern uint3 thread_index, block_index;  // of the running thread
extern dim3 grid_size, block_size;

void sync_block();
void sync_warp();  // waits for the other threads of the running thread's warp
// This thread's `bytes` at `value` swapped with those of lane (lane ^ lane_mask) of its warp.
void shuffle_xor(const void* value, void* out, size_t bytes, int lane_mask);

}  // namespace relpos::cuda_emulation

#define threadIdx (::relpos::cuda_emulation::thread_index)
#define blockIdx (::relpos::cuda_emulation::block_index)
#define gridDim (::relpos::cuda_emulation::grid_size)
#define blockDim (::relpos::cuda_emulation::block_size)

inline void __syncthreads() {
  relpos::cuda_emulation::sync_block();
}

inline void __syncwarp(unsigned /*mask: every lane takes part*/ = 0xffffffffu) {
  relpos::cuda_emulation::sync_warp();
}

template <typename T>
T __shfl_xor_sync(unsigned /*mask: every lane takes part*/, T value, int lane_mask) {
  T out;
  relpos::cuda_emulation::shuffle_xor(&value, &out, sizeof(T), lane_mask);
  return out;
}
