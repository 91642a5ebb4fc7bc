// Ordered LM segments (datasets/lm_batches.h), as Transformer-XL's get_fixlen_iter with ext_len 0.
#include "datasets/lm_batches.h"

#include <algorithm>

#include "core/error.h"

namespace relpos {

LmBatches::LmBatches(const std::vector<uint8_t>& ids, int64_t batch, int64_t tgt_len)
    : batch_(batch), tgt_len_(tgt_len) {
  RELPOS_CHECK(batch > 0 && tgt_len > 0, "lm_batches",
               "batch and tgt_len must be positive, got batch {}, tgt_len {}", batch, tgt_len);
  n_step_ = static_cast<int64_t>(ids.size()) / batch;
  RELPOS_CHECK(n_step_ >= 2, "lm_batches",
               "{} ids in {} rows leave {} per row; need at least 2 (an input and its target)",
               ids.size(), batch, n_step_);
  ids_.assign(ids.begin(), ids.begin() + batch * n_step_);
}

LmSegment LmBatches::segment(int64_t index) const {
  RELPOS_CHECK(index >= 0 && index < num_segments(), "lm_batches",
               "segment {} out of range [0, {})", index, num_segments());
  const int64_t t = index * tgt_len_;
  const int64_t len = std::min(tgt_len_, n_step_ - 1 - t);
  std::vector<int64_t> inputs(static_cast<size_t>(batch_ * len));   // [batch, len]
  std::vector<int64_t> targets(static_cast<size_t>(batch_ * len));  // [batch, len]
  for (int64_t b = 0; b < batch_; ++b) {
    const uint8_t* row = ids_.data() + b * n_step_;
    for (int64_t j = 0; j < len; ++j) {
      inputs[static_cast<size_t>(b * len + j)] = row[t + j];
      targets[static_cast<size_t>(b * len + j)] = row[t + j + 1];
    }
  }
  return {Tensor::from_vector(inputs, {batch_, len}), Tensor::from_vector(targets, {batch_, len})};
}

}  // namespace relpos
