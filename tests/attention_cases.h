// Inputs shared by the attention tests (tests/autograd/test_grad_attention.cpp,
// test_attention_cuda.cpp, tests/cuda_emulation/): a key padding mask that leaves a whole example
// without keys, and the placements of the position term that the layers build.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tests/harness.h"

namespace relpos::test {

// u8 [B, Lk]: about a third of the keys padding, and every key of batch row 1 padding (its
// queries see nothing and must output zeros).
inline Tensor attention_padding_mask(int64_t batch, int64_t k_len, uint64_t seed) {
  Tensor mask = random_indices({batch, k_len}, 3, seed, DType::u8);
  uint8_t* m = mask.data<uint8_t>();
  for (int64_t i = 0; i < batch * k_len; ++i) m[i] = m[i] == 0 ? 0 : 1;
  if (batch > 1)
    for (int64_t j = 0; j < k_len; ++j) m[k_len + j] = 0;
  return mask;
}

// The position term's placement (core/ops.h AttentionSpec::rel_*): tables 0 means none.
struct RelPlacement {
  int64_t offset = 0, min = 0, max = 0, tables = 0, dim = 0;
};

// {placement, window (-1: not causal)} of Transformer-XL (causal, a table per head over the
// distances 0..Lk-1), Shaw (one table, distances clipped to [-3, 3], also causal with a window)
// and skew (one table over every distance), for queries ending at the last key.
inline std::vector<std::pair<RelPlacement, int64_t>> rel_placements(int64_t q_len, int64_t k_len,
                                                                    int64_t heads,
                                                                    int64_t rel_dim) {
  const int64_t shift = k_len - q_len;
  return {{{shift, 0, k_len - 1, heads, rel_dim}, 0},
          {{shift, -3, 3, 1, rel_dim}, -1},
          {{shift, -3, 3, 1, rel_dim}, 17},
          {{0, -(k_len - 1), q_len - 1, 1, rel_dim}, -1}};
}

}  // namespace relpos::test
