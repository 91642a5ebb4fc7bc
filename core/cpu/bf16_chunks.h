// Contiguous bf16 operands through the f32 dense loops of the elementwise kernels: each chunk of
// values is widened to f32 on the stack (exact), the f32 loop runs on the chunk, and its results
// are rounded to bf16 once. The bits are those of computing each element in f32 and rounding (the
// same f32 function; FMA contraction is off), at the f32 loop's vector speed.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/bf16.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

constexpr int64_t kBf16Chunk = 2048;  // values per chunk: 8 KB per f32 array on the stack

RELPOS_SIMD_CLONES inline void widen_bf16(const bf16* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = float_of_bf16_bits(x[i].bits);
}

RELPOS_SIMD_CLONES inline void round_to_bf16(const float* x, bf16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i].bits = bf16_bits_of(x[i]);
}

// out[begin, end) from in[k][begin, end), K bf16 inputs of one length: f32_loop(wide, result, m)
// computes a chunk, wide[k] the f32 values of input k. out may be one of the inputs.
template <size_t K, typename F32Loop>
void through_f32_chunks(const std::array<const bf16*, K>& in, bf16* out, int64_t begin, int64_t end,
                        F32Loop&& f32_loop) {
  alignas(64) float wide[K][kBf16Chunk];
  alignas(64) float result[kBf16Chunk];
  for (int64_t i = begin; i < end; i += kBf16Chunk) {
    const int64_t m = std::min(kBf16Chunk, end - i);
    std::array<const float*, K> chunk;
    for (size_t k = 0; k < K; ++k) {
      widen_bf16(in[k] + i, wide[k], m);
      chunk[k] = wide[k];
    }
    f32_loop(chunk, result, m);
    round_to_bf16(result, out + i, m);
  }
}

}  // namespace relpos::cpu
