// Ordered language-model batches (Transformer-XL's LMOrderedIterator): the id stream cut into
// `batch` equal rows (the tail that does not fill a row is dropped), read in segments of
// tgt_len columns: inputs x[:, t:t+L], targets x[:, t+1:t+L+1].
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace relpos {

struct LmSegment {
  Tensor inputs;   // [batch, len] i64
  Tensor targets;  // [batch, len] i64, inputs shifted left by one
};

class LmBatches {
 public:
  // ids: a split of a CharCorpus (or any id stream). Row b holds ids[b * n_step, (b+1) * n_step).
  // Errors when batch or tgt_len is not positive, or a row has fewer than 2 ids.
  LmBatches(const std::vector<uint8_t>& ids, int64_t batch, int64_t tgt_len);

  int64_t batch() const { return batch_; }
  int64_t n_step() const { return n_step_; }  // ids per row
  // Segments start at t = 0, L, 2L, ... while t < n_step - 1; the last may be shorter:
  // len = min(L, n_step - 1 - t). Same segments, same order, on every call.
  int64_t num_segments() const { return (n_step_ - 1 + tgt_len_ - 1) / tgt_len_; }
  LmSegment segment(int64_t index) const;

 private:
  std::vector<uint8_t> ids_;  // [batch, n_step] row-major
  int64_t batch_ = 0, tgt_len_ = 0, n_step_ = 0;
};

}  // namespace relpos
