// Ordered language-model batches (Transformer-XL's LMOrderedIterator): the id stream cut into
// `batch` contiguous rows, read in segments of tgt_len columns, inputs x[:, t:t+L] and targets
// x[:, t+1:t+L+1]. Row b holds ids[b n .. (b+1) n] (n = (N - 1) / batch): each row ends where the
// next begins, so every id but the first is a target exactly once. The (N - 1) mod batch ids left
// after the rows form a tail that continues the last row (evaluation reads it; training skips it).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace relpos {

struct LmSegment {
  Tensor inputs;   // [rows, len] i64
  Tensor targets;  // [rows, len] i64, inputs shifted left by one
};

class LmBatches {
 public:
  // ids: a split of a CharCorpus (or any id stream). Errors when batch or tgt_len is not
  // positive, or the stream leaves a row without a target.
  LmBatches(const std::vector<uint8_t>& ids, int64_t batch, int64_t tgt_len);

  int64_t batch() const { return batch_; }
  int64_t row_targets() const { return row_targets_; }  // n: the targets of each row
  // Segments start at t = 0, L, 2L, ... while t < n; the last may be shorter.
  int64_t num_segments() const { return (row_targets_ + tgt_len_ - 1) / tgt_len_; }
  LmSegment segment(int64_t index) const;
  // The ids after the rows, one row continuing row batch - 1: inputs [1, T], targets [1, T]
  // with T = (N - 1) mod batch; undefined tensors when T = 0.
  LmSegment tail() const;
  int64_t num_targets() const;  // N - 1: every target of the split, tail included

 private:
  std::vector<uint8_t> ids_;
  int64_t batch_ = 0, tgt_len_ = 0, row_targets_ = 0;
};

}  // namespace relpos
