// elu1: phi(x) = elu(x) + 1, elementwise, so F = D: the feature map of the original linear
// transformer (Katharopoulos et al. 2020, eq. 7; seed 002 §2.3 eq. 4). Positive, and unlike relu
// its gradient does not vanish for negative x.
#include "autograd/functions.h"
#include "layers/attention/feature_map.h"

namespace relpos {
namespace {

class Elu1FeatureMap final : public FeatureMap {
 public:
  explicit Elu1FeatureMap(const AttentionOptions&) {}

  Features forward(const Var& q, const Var& k, const AttentionInputs&) override {
    return unshifted(elu(q) + 1.0, elu(k) + 1.0);  // [B, H, Lq, D], [B, H, Lk, D]
  }

  int64_t feature_dim(int64_t head_dim) const override { return head_dim; }
  std::string name() const override { return "elu1"; }
};

}  // namespace

RELPOS_REGISTER_FEATURE_MAP("elu1", Elu1FeatureMap);

}  // namespace relpos
