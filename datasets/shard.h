// How the ranks of a data-parallel job split a batch (train/distributed.h): rank r of N takes
// rows [begin, end), contiguous, in rank order, sizes differing by at most one (the first
// rows % N ranks take one more); some are empty when rows < N. The same rule cuts classifier
// batches (DataLoader) and language-model rows (LmBatches), so every example of a global batch
// lands on exactly one rank.
#pragma once

#include <algorithm>
#include <cstdint>

namespace relpos {

struct Shard {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

inline Shard shard_of(int64_t rows, int64_t rank, int64_t ranks) {
  const int64_t base = rows / ranks, extra = rows % ranks;
  const int64_t begin = rank * base + std::min(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace relpos
