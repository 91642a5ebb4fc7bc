// Generator: a Philox seed plus a counter offset. Each random op reserves the blocks it uses,
// so consecutive calls draw fresh numbers and a saved (seed, offset) replays them exactly.
#pragma once

#include <cstdint>

namespace relpos {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) {
    seed_ = seed;
    offset_ = offset;
  }
  // Returns the current offset and advances it by `blocks`.
  uint64_t reserve(uint64_t blocks) {
    const uint64_t start = offset_;
    offset_ += blocks;
    return start;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace relpos
