// Sums the gradients of a model over the ranks of a data-parallel job (train/distributed.h), as
// PyTorch DDP does: parameters are grouped into buckets of about `bucket_bytes` in reverse
// registration order (the order backward finishes them), each bucket is one flat buffer, and a
// bucket's all-reduce starts as soon as backward has completed the gradient of its last
// parameter (the engine's grad-ready hook), so communication overlaps the rest of backward.
// finish() completes the rest (a parameter no path reached counts as a zero gradient) and leaves
// every parameter's gradient the sum over ranks. In a job of one it does nothing.
#pragma once

#include <chrono>
#include <memory>
#include <unordered_map>
#include <vector>

#include "autograd/grad_ready.h"
#include "autograd/var.h"
#include "core/comm/comm.h"

namespace relpos {

class GradientReducer {
 public:
  static constexpr int64_t kDefaultBucketBytes = 4 << 20;

  GradientReducer(std::vector<Var> params, int64_t bucket_bytes = kDefaultBucketBytes);

  // Backward passes in the scope report finished gradients and launch full buckets. Arm the last
  // backward before an update only (earlier ones of an accumulation add up locally first).
  std::unique_ptr<GradReadyScope> arm();
  // Launches what is left, waits for every bucket and sets each gradient to its sum over ranks.
  void finish();

  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }
  // Seconds finish() waited for communication in the last update: what did not overlap.
  double exposed_seconds() const { return exposed_seconds_; }

 private:
  struct Bucket {
    std::vector<int64_t> params;   // indices into params_
    std::vector<int64_t> offsets;  // each one's start in the flat buffer
    int64_t numel = 0;
    int64_t ready = 0;
    Tensor flat;  // the buffer in flight (this update's)
    std::unique_ptr<comm::Request> request;
  };
  void ready(VarImpl& leaf);
  void launch(Bucket& bucket);

  std::vector<Var> params_;
  std::vector<Bucket> buckets_;
  std::unordered_map<VarImpl*, int64_t> bucket_of_;  // a parameter -> its bucket
  double exposed_seconds_ = 0;
};

}  // namespace relpos
