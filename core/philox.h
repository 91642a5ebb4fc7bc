// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
// Counter-based: the value of element i depends only on (seed, counter), so the CPU loop and a
// CUDA thread that compute element i produce the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace relpos::philox {

struct Block {
  uint32_t v[4];
};

RELPOS_HOST_DEVICE uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// The round multipliers and the key's increments (Weyl sequence) of Philox4x32.
inline constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

// Ten rounds of Philox4x32 on counter `ctr` (128 bits as four words) with a 64-bit key.
RELPOS_HOST_DEVICE Block philox4x32_10(Block ctr, uint64_t seed) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo(kM0, ctr.v[0], &hi0);
    const uint32_t lo1 = mulhilo(kM1, ctr.v[2], &hi1);
    ctr = Block{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// The block at 64-bit counter position `index` (upper counter words zero).
RELPOS_HOST_DEVICE Block block_at(uint64_t seed, uint64_t index) {
  return philox4x32_10(
      Block{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u}}, seed);
}

// A 32-bit word to a double in [0, 1) (uses all 32 bits).
RELPOS_HOST_DEVICE double to_unit(uint32_t w) {
  return w * (1.0 / 4294967296.0);
}

// Uniform [0, 1) for element i of a stream starting at block `offset`: four values per block.
RELPOS_HOST_DEVICE double uniform(uint64_t seed, uint64_t offset, uint64_t i) {
  return to_unit(block_at(seed, offset + i / 4).v[i % 4]);
}

// A standard normal from two words (Box-Muller, the cosine half).
RELPOS_HOST_DEVICE double box_muller(uint32_t w0, uint32_t w1) {
  const double u1 = 1.0 - to_unit(w0);  // (0, 1]: log stays finite
  const double u2 = to_unit(w1);
  const double r = ::sqrt(-2.0 * ::log(u1));
  return r * ::cos(6.283185307179586 * u2);
}

// Standard normal for element i: words 2 (i % 2) and 2 (i % 2) + 1 of block offset + i / 2.
RELPOS_HOST_DEVICE double normal(uint64_t seed, uint64_t offset, uint64_t i) {
  const Block b = block_at(seed, offset + i / 2);
  const uint32_t w = static_cast<uint32_t>(i % 2) * 2;
  return box_muller(b.v[w], b.v[w + 1]);
}

// Blocks that uniform() and normal() consume for n elements.
RELPOS_HOST_DEVICE uint64_t blocks_for_uniform(uint64_t n) {
  return (n + 3) / 4;
}
RELPOS_HOST_DEVICE uint64_t blocks_for_normal(uint64_t n) {
  return (n + 1) / 2;
}

}  // namespace relpos::philox
