// Philox blocks in bulk for the CPU's random draws and dropout masks (the same words as
// philox::block_at, many consecutive counters at a time), and the keep test of dropout on the raw
// word.
#pragma once

#include <cmath>
#include <cstdint>

namespace relpos::cpu {

// words[4 b + w] = philox::block_at(seed, first + b).v[w] for b < count (philox_words.cpp).
void philox_words(uint64_t seed, uint64_t first, int64_t count, uint32_t* words);

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
