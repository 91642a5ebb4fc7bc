// Philox 4x32-10 blocks of consecutive counters (core/philox.h, Salmon et al. 2011), bit for bit
// philox::block_at. With AVX2, eight blocks at a time: each of the four counter words of the eight
// blocks in one register, the 32 x 32 -> 64-bit products' high halves from two vpmuludq (even and
// odd lanes) and their low halves from vpmulld, then a 4 x 8 transpose into the words' order.
// Elsewhere, one loop that the compiler vectorizes as it can.
#include "core/cpu/philox_words.h"

#include "core/philox.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RELPOS_PHILOX_AVX2 1
#endif

namespace relpos::cpu {

namespace {

using philox::kM0, philox::kM1, philox::kW0, philox::kW1;

void philox_words_portable(uint64_t seed, uint64_t first, int64_t count, uint32_t* words) {
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

#ifdef RELPOS_PHILOX_AVX2

// The high 32 bits of m x (each 32-bit lane of x).
__attribute__((target("avx2"))) inline __m256i mul_high(__m256i x, __m256i m) {
  const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(x, m), 32);  // lanes 0, 2, 4, 6
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);   // lanes 1, 3, 5, 7, high
  return _mm256_blend_epi32(even, odd, 0xAA);
}

// Blocks first .. first + 7, whose counters' low words do not wrap (their high words are equal).
__attribute__((target("avx2"))) inline void eight_blocks(uint64_t seed, uint64_t first,
                                                         uint32_t* words) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kM1));
  __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first)),
                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i c1 = _mm256_set1_epi32(static_cast<int>(first >> 32));
  __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const __m256i hi0 = mul_high(c0, m0), lo0 = _mm256_mullo_epi32(c0, m0);
    const __m256i hi1 = mul_high(c2, m1), lo1 = _mm256_mullo_epi32(c2, m1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    c1 = lo1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  // Lane j of c0..c3 is block j's words 0..3: transpose into [block][word].
  const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
  const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
  const __m256i b04 = _mm256_unpacklo_epi64(t0, t2), b15 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i b26 = _mm256_unpacklo_epi64(t1, t3), b37 = _mm256_unpackhi_epi64(t1, t3);
  auto* out = reinterpret_cast<__m256i*>(words);
  _mm256_storeu_si256(out, _mm256_permute2x128_si256(b04, b15, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(b26, b37, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(b04, b15, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(b26, b37, 0x31));
}

__attribute__((target("avx2"))) void philox_words_avx2(uint64_t seed, uint64_t first, int64_t count,
                                                       uint32_t* words) {
  int64_t b = 0;
  for (; b + 8 <= count; b += 8) {
    const uint64_t index = first + static_cast<uint64_t>(b);
    if (static_cast<uint32_t>(index) > UINT32_MAX - 7)  // the low word wraps inside the eight
      philox_words_portable(seed, index, 8, words + 4 * b);
    else
      eight_blocks(seed, index, words + 4 * b);
  }
  philox_words_portable(seed, first + static_cast<uint64_t>(b), count - b, words + 4 * b);
}

#endif

}  // namespace

void philox_words(uint64_t seed, uint64_t first, int64_t count, uint32_t* words) {
#ifdef RELPOS_PHILOX_AVX2
  if (__builtin_cpu_supports("avx2")) return philox_words_avx2(seed, first, count, words);
#endif
  philox_words_portable(seed, first, count, words);
}

}  // namespace relpos::cpu
