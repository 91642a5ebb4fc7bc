// Ordered language-model batches (Transformer-XL's LMOrderedIterator): the id stream cut into
// `batch` contiguous rows, read in segments of tgt_len columns, inputs x[:, t:t+L] and targets
// x[:, t+1:t+L+1]. Two layouts:
// - shared_boundaries (relpos's): row b holds ids[b n .. (b+1) n] (n = (N - 1) / batch): each
//   row ends where the next begins, so every id but the first is a target exactly once. The
//   (N - 1) mod batch ids left after the rows form a tail that continues the last row
//   (evaluation reads it, in segments of tgt_len like the rows; training skips it).
// - reference (kimiyoung/transformer-xl's): row b holds ids[b m .. (b+1) m) (m = N / batch),
//   targets ids[b m + 1 .. (b+1) m): the first id of every row is never a target, and the
//   N mod batch ids after the rows are dropped. The numbers of the paper are scored this way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace relpos {

struct LmSegment {
  Tensor inputs;   // [rows, len] i64
  Tensor targets;  // [rows, len] i64, inputs shifted left by one
};

enum class LmLayout { shared_boundaries, reference };

// "relpos" (shared_boundaries) or "reference"; anything else is an error naming `key`.
LmLayout lm_layout_from_name(const std::string& name, const std::string& key);

class LmBatches {
 public:
  // ids: a split of a CharCorpus (or any id stream). Errors when batch or tgt_len is not
  // positive, or the stream leaves a row without a target.
  LmBatches(const std::vector<uint8_t>& ids, int64_t batch, int64_t tgt_len,
            LmLayout layout = LmLayout::shared_boundaries);
  // The fewest ids that give each of `batch` rows a target (INT64_MAX where that overflows).
  static int64_t min_ids(int64_t batch, LmLayout layout);

  int64_t batch() const { return batch_; }
  int64_t row_targets() const { return row_targets_; }  // n: the targets of each row
  // Segments start at t = 0, L, 2L, ... while t < n; the last may be shorter.
  int64_t num_segments() const { return (row_targets_ + tgt_len_ - 1) / tgt_len_; }
  LmSegment segment(int64_t index) const;
  // The T = (N - 1) mod batch ids after the rows, one row continuing row batch - 1, in segments
  // of tgt_len (the last may be shorter): inputs [1, len], targets [1, len]. None when T = 0,
  // and in the reference layout.
  int64_t num_tail_segments() const;
  LmSegment tail_segment(int64_t index) const;
  // The targets scored: N - 1 (every one, tail included), or batch (m - 1) in the reference
  // layout.
  int64_t num_targets() const;

 private:
  std::vector<uint8_t> ids_;
  LmLayout layout_;
  int64_t batch_ = 0, tgt_len_ = 0, row_targets_ = 0;
  int64_t row_stride_ = 0;  // ids from one row's start to the next's
};

}  // namespace relpos
