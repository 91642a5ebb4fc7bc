// GradientReducer (train/gradient_reducer.h).
#include "train/gradient_reducer.h"

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

GradientReducer::GradientReducer(std::vector<Var> params, int64_t bucket_bytes)
    : params_(std::move(params)) {
  if (!comm::distributed()) return;
  // Reverse registration order: the last layers' gradients are complete first. A bucket holds
  // one dtype on one device.
  for (int64_t i = static_cast<int64_t>(params_.size()) - 1; i >= 0; --i) {
    const Var& p = params_[i];
    const int64_t bytes = p.numel() * static_cast<int64_t>(dtype_size(p.dtype()));
    const bool fits =
        !buckets_.empty() && buckets_.back().numel > 0 &&
        params_[buckets_.back().params.front()].dtype() == p.dtype() &&
        params_[buckets_.back().params.front()].device() == p.device() &&
        (buckets_.back().numel + p.numel()) * static_cast<int64_t>(dtype_size(p.dtype())) <=
            std::max(bucket_bytes, bytes);
    if (!fits) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.params.push_back(i);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bucket_of_[p.impl()] = static_cast<int64_t>(buckets_.size()) - 1;
  }
}

std::unique_ptr<GradReadyScope> GradientReducer::arm() {
  if (!comm::distributed()) return nullptr;
  for (Bucket& b : buckets_) b.ready = 0;
  return std::make_unique<GradReadyScope>([this](VarImpl& leaf) { ready(leaf); });
}

void GradientReducer::ready(VarImpl& leaf) {
  const auto it = bucket_of_.find(&leaf);
  if (it == bucket_of_.end()) return;  // not a parameter of this model (an input)
  Bucket& b = buckets_[static_cast<size_t>(it->second)];
  ++b.ready;
  // Let MPI move the buckets already in flight (it progresses them only inside its calls).
  for (Bucket& other : buckets_)
    if (other.request) other.request->test();
  if (b.ready == static_cast<int64_t>(b.params.size()) && !b.request) launch(b);
}

void GradientReducer::launch(Bucket& b) {
  // A fresh buffer each update: the gradients handed out last time are views of the old one.
  const Var& first = params_[b.params.front()];
  b.flat = zeros({b.numel}, first.dtype(), first.device());
  for (size_t k = 0; k < b.params.size(); ++k) {
    const Var& p = params_[b.params[k]];
    if (!p.grad().defined()) continue;  // no path reached it on this rank: it adds zeros
    copy_(b.flat.slice(0, b.offsets[k], b.offsets[k] + p.numel()), p.grad().reshape({-1}));
  }
  b.request = comm::all_reduce_sum_async(b.flat);
}

void GradientReducer::finish() {
  if (!comm::distributed()) return;
  const auto start = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_)
    if (!b.request) launch(b);
  for (Bucket& b : buckets_) {
    b.request->wait();
    b.request.reset();
    for (size_t k = 0; k < b.params.size(); ++k) {
      Var& p = params_[b.params[k]];
      p.set_grad(b.flat.slice(0, b.offsets[k], b.offsets[k] + p.numel()).reshape(p.shape()));
    }
  }
  exposed_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace relpos
