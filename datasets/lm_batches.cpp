// Ordered LM segments (datasets/lm_batches.h), as Transformer-XL's get_fixlen_iter with ext_len 0:
// its own layout, or rows that share their boundary id, so no id is skipped.
#include "datasets/lm_batches.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace relpos {

LmLayout lm_layout_from_name(const std::string& name, const std::string& key) {
  if (name == "relpos") return LmLayout::shared_boundaries;
  if (name == "reference") return LmLayout::reference;
  fail("config",
       "{} must be relpos (every target scored once) or reference (Transformer-XL's "
       "scoring), got '{}'",
       key, name);
}

int64_t LmBatches::min_ids(int64_t batch, LmLayout layout) {
  int64_t ids = 0;
  const bool past = layout == LmLayout::reference ? __builtin_mul_overflow(batch, 2, &ids)
                                                  : __builtin_add_overflow(batch, 1, &ids);
  return past ? std::numeric_limits<int64_t>::max() : ids;
}

LmBatches::LmBatches(const std::vector<uint8_t>& ids, int64_t batch, int64_t tgt_len,
                     LmLayout layout)
    : ids_(ids), layout_(layout), batch_(batch), tgt_len_(tgt_len) {
  RELPOS_CHECK(batch > 0 && tgt_len > 0, "lm_batches",
               "batch and tgt_len must be positive, got batch {}, tgt_len {}", batch, tgt_len);
  const int64_t n = static_cast<int64_t>(ids.size());
  if (layout == LmLayout::reference) {
    row_stride_ = n / batch;
    row_targets_ = std::max<int64_t>(0, row_stride_ - 1);
  } else {
    row_targets_ = n > 0 ? (n - 1) / batch : 0;
    row_stride_ = row_targets_;
  }
  RELPOS_CHECK(row_targets_ >= 1, "lm_batches",
               "{} ids in {} rows leave no target per row; need at least {} ids", n, batch,
               min_ids(batch, layout));
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
  for (int64_t b = 0; b < batch_; ++b) starts.push_back(b * row_stride_ + t);
  return slice_rows(ids_, starts, len);
}

int64_t LmBatches::num_tail_segments() const {
  if (layout_ == LmLayout::reference) return 0;
  const int64_t tail = num_targets() - batch_ * row_targets_;
  return (tail + tgt_len_ - 1) / tgt_len_;
}

LmSegment LmBatches::tail_segment(int64_t index) const {
  RELPOS_CHECK(index >= 0 && index < num_tail_segments(), "lm_batches",
               "tail segment {} out of range [0, {})", index, num_tail_segments());
  const int64_t start = batch_ * row_targets_ + index * tgt_len_;
  return slice_rows(ids_, {start}, std::min(tgt_len_, num_targets() - start));
}

int64_t LmBatches::num_targets() const {
  if (layout_ == LmLayout::reference) return batch_ * row_targets_;
  return static_cast<int64_t>(ids_.size()) - 1;
}

}  // namespace relpos
