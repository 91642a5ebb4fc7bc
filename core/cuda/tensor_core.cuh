// The tensor cores' instructions that relpos uses, warp-wide. mma_bf16: D += A·B with A [16 x 16]
// and B [16 x 8] in bf16 and D [16 x 8] in f32 (PTX
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, compute capability 8.0+), on fragments that
// stay in registers. Lane L of the warp holds, with g = L / 4 and t = L % 4 (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type"):
//   A: a[0] = (g, 2t..2t+1), a[1] = (g + 8, 2t..2t+1), a[2] = (g, 2t+8..2t+9),
//      a[3] = (g + 8, 2t+8..2t+9), two bf16 per register, the lower column in the low half;
//   B: b[0] = (2t..2t+1, g), b[1] = (2t+8..2t+9, g), the lower row in the low half;
//   D: d0, d1 = (g, 2t), (g, 2t + 1); d2, d3 = (g + 8, 2t), (g + 8, 2t + 1).
// D's layout over two neighbouring 8-column blocks is A's over 16 columns, so a product's result
// becomes the next product's A operand without leaving the registers (FlashAttention-2's P̃).
// load_matrices: four 8 x 8 bf16 matrices from shared memory into such fragments (ldmatrix .x4,
// compute capability 7.5+), optionally transposed, one instruction for what would be eight loads.
// Compiled as host C++ (tests/cuda_emulation), the instructions are the emulator's stand-ins,
// which gather the warp's fragments and addresses as the hardware does.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/bf16.h"

namespace relpos::cuda::tensor_core {

// Two bf16 as one operand register, `low` in the low half.
__device__ __forceinline__ uint32_t pack(bf16 low, bf16 high) {
  return static_cast<uint32_t>(low.bits) | static_cast<uint32_t>(high.bits) << 16;
}
// ... rounded from f32 to nearest even.
__device__ __forceinline__ uint32_t pack(float low, float high) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  return *reinterpret_cast<const uint32_t*>(&pair);
#else
  return pack(bf16(low), bf16(high));
#endif
}

// Lanes 8 i .. 8 i + 7 give the addresses of matrix i's 8 rows (8 bf16 each, 16-byte aligned); r[i]
// of lane L receives matrix i's row L / 4, columns 2 (L % 4) and 2 (L % 4) + 1 (kTransposed: rows
// 2 (L % 4) and 2 (L % 4) + 1 of column L / 4), the first in the low half.
template <bool kTransposed>
__device__ __forceinline__ void load_matrices(uint32_t (&r)[4], const bf16* row) {
#if !defined(__CUDACC__)
  emulated_ldmatrix_x4(r, row, kTransposed);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // the bf16 kernels run on sm_80+ (tiled_attention_fits)
#else
  const auto at = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (kTransposed)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at)
                 : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at)
                 : "memory");
#endif
}

__device__ __forceinline__ void mma_bf16(float& d0, float& d1, float& d2, float& d3,
                                         const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if !defined(__CUDACC__)
  emulated_mma_m16n8k16_bf16(d0, d1, d2, d3, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // needs sm_80; tiled_attention_fits sends bf16 elsewhere on older GPUs
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

}  // namespace relpos::cuda::tensor_core
