// Philox blocks in bulk for the CPU's random draws and dropout masks: the same words as
// philox::block_at, computed for many consecutive counters in one loop that GCC vectorizes (the
// 32 x 32 -> 64-bit products map to vector multiplies), and the keep test of dropout on the raw
// word.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cpu/vec_math.h"
#include "core/philox.h"

namespace relpos::cpu {

// words[4 b + w] = philox::block_at(seed, first + b).v[w] for b < count.
RELPOS_SIMD_CLONES inline void philox_words(uint64_t seed, uint64_t first, int64_t count,
                                            uint32_t* words) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma omp simd
  for (int64_t b = 0; b < count; ++b) {
    const uint64_t index = first + static_cast<uint64_t>(b);
    uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32), c2 = 0,
             c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {  // philox::philox4x32_10, written out
      const uint64_t p0 = static_cast<uint64_t>(kM0) * c0, p1 = static_cast<uint64_t>(kM1) * c2;
      const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
      k0 += kW0;
      k1 += kW1;
    }
    words[4 * b] = c0;
    words[4 * b + 1] = c1;
    words[4 * b + 2] = c2;
    words[4 * b + 3] = c3;
  }
}

// Dropout keeps an element whose uniform number philox::to_unit(w) = w / 2^32 is >= p, that is
// whose word w is >= ceil(p 2^32) (both sides exact in double).
inline uint64_t keep_threshold(double p) {
  return static_cast<uint64_t>(std::ceil(p * 4294967296.0));
}

// The same test on 32-bit operands, which vectorize (AVX2 has no unsigned 64-bit compare, so the
// test on the zero-extended word ran one element at a time): a word passes when it is >= least,
// and a passing word is kept unless the threshold is 2^32 (p within 2^-32 of 1: no word is kept).
struct KeepTest {
  uint32_t least;
  bool passing_kept;
};
inline KeepTest keep_test(double p) {
  const uint64_t threshold = keep_threshold(p);
  if (threshold > UINT32_MAX) return {UINT32_MAX, false};
  return {static_cast<uint32_t>(threshold), true};
}

}  // namespace relpos::cpu
