// relu: phi(x) = relu(x) + relu_eps, elementwise, so F = D: the "Linear, ReLU" kernel of seed
// 002's Tables 1 and 3. relu_eps (default 1e-3, as in the LRA runs, EXPERIMENTS.md) keeps a
// query whose entries are all negative from having zero similarity to every key.
#include "autograd/functions.h"
#include "layers/attention/feature_map.h"

namespace relpos {
namespace {

class ReluFeatureMap final : public FeatureMap {
 public:
  explicit ReluFeatureMap(const AttentionOptions& opt)
      : eps_(opt.options.get<double>("relu_eps", 1e-3)) {
    RELPOS_CHECK(eps_ >= 0, "feature_map relu", "relu_eps must be >= 0, got {}", eps_);
  }

  Features forward(const Var& q, const Var& k, const AttentionInputs&) override {
    return unshifted(relu(q) + eps_, relu(k) + eps_);  // [B, H, Lq, D], [B, H, Lk, D]
  }

  int64_t feature_dim(int64_t head_dim) const override { return head_dim; }
  std::string name() const override { return "relu"; }

 private:
  double eps_;
};

}  // namespace

RELPOS_REGISTER_FEATURE_MAP("relu", ReluFeatureMap);

}  // namespace relpos
