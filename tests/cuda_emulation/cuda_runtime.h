// Stands in for the CUDA runtime header when relpos's kernel sources are compiled as host C++ by
// the tests of tests/cuda_emulation (and only there: it is first on their include path). The
// keywords become plain C++, the vector types and built-in indices are host values that the
// emulator (emulator.h) sets for each thread, and __syncthreads, __syncwarp, __shfl_xor_sync and
// the tensor cores' instruction (core/cuda/tensor_core.cuh) wait for the other threads of the
// block or warp, which run as fibers.
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
// Every lane of the running thread's warp puts `bytes` (at most kSlotBytes) from `mine`; `all`
// receives the 32 lanes' bytes in lane order, kSlotBytes apart. The warp must be whole.
constexpr size_t kSlotBytes = 32;
void exchange_in_warp(const void* mine, size_t bytes, unsigned char* all);

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

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 for core/cuda/tensor_core.cuh, warp-wide:
// gathers the warp's A and B fragments by the PTX ISA's layout and adds this lane's part of A·B
// to d0..d3.
void emulated_mma_m16n8k16_bf16(float& d0, float& d1, float& d2, float& d3, const uint32_t (&a)[4],
                                const uint32_t (&b)[2]);
// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, warp-wide: gathers the lanes' row addresses
// and gives this lane its elements of the four bf16 matrices.
void emulated_ldmatrix_x4(uint32_t (&r)[4], const void* row, bool transposed);

template <typename T>
T __shfl_xor_sync(unsigned /*mask: every lane takes part*/, T value, int lane_mask) {
  T out;
  relpos::cuda_emulation::shuffle_xor(&value, &out, sizeof(T), lane_mask);
  return out;
}
