// Ordered LM segments (datasets/lm_batches.h), as Transformer-XL's get_fixlen_iter with ext_len 0
// but rows that share their boundary id, so no id is skipped.
#include "datasets/lm_batches.h"

#include <algorithm>

#include "core/error.h"

namespace relpos {

LmBatches::LmBatches(const std::vector<uint8_t>& ids, int64_t batch, int64_t tgt_len)
    : ids_(ids), batch_(batch), tgt_len_(tgt_len) {
  RELPOS_CHECK(batch > 0 && tgt_len > 0, "lm_batches",
               "batch and tgt_len must be positive, got batch {}, tgt_len {}", batch, tgt_len);
  const int64_t n = static_cast<int64_t>(ids.size());
  row_targets_ = n > 0 ? (n - 1) / batch : 0;
  RELPOS_CHECK(row_targets_ >= 1, "lm_batches",
               "{} ids in {} rows leave no target per row; need at least {} ids", n, batch,
               batch + 1);
}

namespace {

// Inputs ids[start + t + j], targets one later, j < len, for each row start.
LmSegment slice_rows(const std::vector<uint8_t>& ids, const std::vector<int64_t>& starts,
                     int64_t len) {
  const auto rows = static_cast<int64_t>(starts.size());
  std::vector<int64_t> inputs(static_cast<size_t>(rows * len)), targets(inputs.size());
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t j = 0; j < len; ++j) {
      const auto at = static_cast<size_t>(starts[static_cast<size_t>(b)] + j);
      inputs[static_cast<size_t>(b * len + j)] = ids[at];
      targets[static_cast<size_t>(b * len + j)] = ids[at + 1];
    }
  return {Tensor::from_vector(inputs, {rows, len}), Tensor::from_vector(targets, {rows, len})};
}

}  // namespace

LmSegment LmBatches::segment(int64_t index) const {
  RELPOS_CHECK(index >= 0 && index < num_segments(), "lm_batches",
               "segment {} out of range [0, {})", index, num_segments());
  const int64_t t = index * tgt_len_;
  const int64_t len = std::min(tgt_len_, row_targets_ - t);
  std::vector<int64_t> starts;
  for (int64_t b = 0; b < batch_; ++b) starts.push_back(b * row_targets_ + t);
  return slice_rows(ids_, starts, len);
}

LmSegment LmBatches::tail() const {
  const int64_t len = num_targets() - batch_ * row_targets_;
  if (len == 0) return {};
  return slice_rows(ids_, {batch_ * row_targets_}, len);
}

int64_t LmBatches::num_targets() const {
  return static_cast<int64_t>(ids_.size()) - 1;
}

}  // namespace relpos
