// dpfp: deterministic parameter-free projection (Schlag et al. 2021, "Linear Transformers are
// secretly fast weight programmers", §5.3; seed 002 §2.3 eq. 6). With r(x) = [relu(x),
// relu(-x)] in R^2D, phi(x)_(i, j) = r_j · r_((j + i) mod 2D) for i = 1..nu, j = 0..2D-1, the
// nu blocks concatenated: F = 2 D nu. Option `nu` (default 1) must satisfy 1 <= nu < 2D.
#include "autograd/functions.h"
#include "layers/attention/feature_map.h"

namespace relpos {
namespace {

class DpfpFeatureMap final : public FeatureMap {
 public:
  explicit DpfpFeatureMap(const AttentionOptions& opt)
      : nu_(opt.options.get<int64_t>("nu", 1)), head_dim_(opt.head_dim) {
    RELPOS_CHECK(head_dim_ > 0, "feature_map dpfp", "head_dim must be known, got {}", head_dim_);
    RELPOS_CHECK(nu_ >= 1 && nu_ < 2 * head_dim_, "feature_map dpfp",
                 "nu must be in [1, 2 * head_dim) = [1, {}), got {}", 2 * head_dim_, nu_);
  }

  Features forward(const Var& q, const Var& k, const AttentionInputs&) override {
    RELPOS_CHECK(q.size(3) == head_dim_, "feature_map dpfp", "built for head_dim {}, got {}",
                 head_dim_, q.size(3));
    return unshifted(project(q), project(k));  // [B, H, Lq, F], [B, H, Lk, F]
  }

  int64_t feature_dim(int64_t head_dim) const override { return 2 * head_dim * nu_; }
  std::string name() const override { return "dpfp"; }

 private:
  // x: [B, H, L, D] -> [B, H, L, 2 D nu]
  Var project(const Var& x) const {
    const int64_t width = 2 * head_dim_;
    Var r = cat({relu(x), relu(-x)}, 3);  // [B, H, L, 2D]
    std::vector<Var> blocks;
    for (int64_t i = 1; i <= nu_; ++i) {
      // rolled_j = r_((j + i) mod 2D)
      Var rolled = cat({slice(r, 3, i, width), slice(r, 3, 0, i)}, 3);  // [B, H, L, 2D]
      blocks.push_back(r * rolled);
    }
    return cat(blocks, 3);
  }

  int64_t nu_;
  int64_t head_dim_;
};

}  // namespace

RELPOS_REGISTER_FEATURE_MAP("dpfp", DpfpFeatureMap);

}  // namespace relpos
