// cosformer: phi(x_i) = [relu(x_i) cos(pi i / 2M), relu(x_i) sin(pi i / 2M)] (Qin et al. 2022,
// "cosFormer: Rethinking Softmax in Attention", eqs. 9–11), so that
//   phi(q_i)·phi(k_j) = relu(q_i)·relu(k_j) cos(pi (i - j) / 2M),
// a non-negative similarity re-weighted towards nearby tokens; F = 2D. i and j are the tokens'
// positions (AttentionInputs: query i at query_offset + i, key j at j), M is the option
// `cosformer_len` (default: the layer's max_len). Every position must lie in [0, M], or the
// weight of far pairs would turn negative.
#include <cmath>
#include <numbers>

#include "autograd/functions.h"
#include "layers/attention/feature_map.h"

namespace relpos {
namespace {

constexpr const char* kWho = "feature_map cosformer";

class CosformerFeatureMap final : public FeatureMap {
 public:
  explicit CosformerFeatureMap(const AttentionOptions& opt)
      : length_(opt.options.get_inherited<int64_t>("cosformer_len", opt.max_len)) {
    RELPOS_CHECK(length_ > 0, kWho,
                 "cosformer_len must be > 0 (its default, the layer's max_len, is not known "
                 "here), got {}",
                 length_);
    // The layer's keys reach position max_len - 1: refused when built, not by the first batch
    // that is long enough.
    RELPOS_CHECK(opt.max_len <= 0 || opt.max_len - 1 <= length_, kWho,
                 "cosformer_len {} is shorter than the layer's positions (up to {}: max_len {}); "
                 "the re-weighting cos(pi (i - j) / 2M) would turn negative",
                 length_, opt.max_len - 1, opt.max_len);
  }

  Features forward(const Var& q, const Var& k, const AttentionInputs& in) override {
    const int64_t q_len = q.size(2), k_len = k.size(2), q_start = in.query_offset(q_len, k_len);
    const int64_t last = std::max(q_start + q_len, k_len) - 1;
    RELPOS_CHECK(last <= length_, kWho,
                 "positions up to {} exceed cosformer_len {} (default: the model's max_len, "
                 "kept from training): the re-weighting cos(pi (i - j) / 2M) would turn negative",
                 last, length_);
    return unshifted(reweight(q, q_start), reweight(k, 0));  // [B, H, Lq, 2D], [B, H, Lk, 2D]
  }

  int64_t feature_dim(int64_t head_dim) const override { return 2 * head_dim; }
  bool uses_positions() const override { return true; }
  int64_t max_keys() const override { return length_ + 1; }  // positions 0 .. M
  std::string name() const override { return "cosformer"; }

 private:
  // x: [B, H, L, D] of the tokens at positions start .. start + L - 1 -> [B, H, L, 2D]
  Var reweight(const Var& x, int64_t start) const {
    const int64_t len = x.size(2);
    const double step = std::numbers::pi / (2.0 * static_cast<double>(length_));
    const Tensor angle =
        mul_scalar(arange(static_cast<double>(start), static_cast<double>(start + len), 1,
                          x.dtype(), x.value().device()),
                   step)
            .reshape({1, 1, len, 1});  // [1, 1, L, 1]
    const Var r = relu(x);
    return cat({r * Var(cos(angle)), r * Var(sin(angle))}, 3);
  }

  int64_t length_;  // M
};

}  // namespace

RELPOS_REGISTER_FEATURE_MAP("cosformer", CosformerFeatureMap);

}  // namespace relpos
