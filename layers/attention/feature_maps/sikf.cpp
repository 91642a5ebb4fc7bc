// sikf: phi(x) = exp(x) after a constant shift (seed 002 §3.1 eq. 9, "shift-invariant kernel
// function"); F = D. A shift c of q and d of k scales every score of a (b, h) by e^(c + d), which
// cancels between numerator and denominator, so the shift only guards exp. `sikf_shift`:
//   max (default): q minus its own max per query (a factor per row, which cancels within the
//     row), k minus one max per (b, h) over real keys: every exponent is <= 0, so exp never
//     overflows however large the spread (e.g. q in [0, 1000]);
//   mean: the reference's one scalar per (b, h), mean(q) + mean(k over real keys), subtracted
//     from both; it centres the values but overflows once they spread beyond ~700 (f64).
// The shift is a constant (no gradient through it).
#include "autograd/functions.h"
#include "layers/attention/feature_map.h"
#include "layers/attention/feature_maps/stabilizer.h"
#include "layers/attention/masks.h"

namespace relpos {
namespace {

class SikfFeatureMap final : public FeatureMap {
 public:
  explicit SikfFeatureMap(const AttentionOptions& opt)
      : shift_(opt.options.get<std::string>("sikf_shift", "max")) {
    RELPOS_CHECK(shift_ == "max" || shift_ == "mean", "feature_map sikf",
                 "sikf_shift must be max or mean, got '{}'", shift_);
  }

  std::pair<Var, Var> forward(const Var& q, const Var& k, const AttentionInputs& in) override {
    const Tensor padding = padding_rows(in.key_mask);  // [B, 1, Lk, 1] or undefined
    Tensor q_shift, k_shift;                           // broadcast against q and k
    if (shift_ == "max") {
      q_shift = max(q.value(), {3}, true);               // [B, H, Lq, 1]
      k_shift = max_over_real_keys(k.value(), padding);  // [B, H, 1, 1]
    } else {
      q_shift = add(mean(q.value(), {2, 3}, true), mean_over_real_keys(k.value(), in));
      k_shift = q_shift;  // [B, H, 1, 1]
    }
    Var k_arg = k - Var(k_shift);  // [B, H, Lk, D]
    // Padding keys (dropped by the attention) get exp(0): finite, whatever their values.
    if (padding.defined()) k_arg = masked_fill(k_arg, padding, 0.0);
    return {exp(q - Var(q_shift)), exp(k_arg)};  // [B, H, Lq, D], [B, H, Lk, D]
  }

  int64_t feature_dim(int64_t head_dim) const override { return head_dim; }
  std::string name() const override { return "sikf"; }

 private:
  // k: [B, H, Lk, D] -> [B, H, 1, 1]; 0 for a row without real keys.
  static Tensor mean_over_real_keys(const Tensor& k, const AttentionInputs& in) {
    if (!in.key_mask.defined()) return mean(k, {2, 3}, true);
    const Tensor keep = key_keep_column(in.key_mask, k.dtype());  // [B, 1, Lk, 1]
    const Tensor count = mul_scalar(sum(keep, {2, 3}, true), static_cast<double>(k.size(3)));
    const Tensor one = full({1}, 1.0, k.dtype(), k.device());
    return div(sum(mul(k, keep), {2, 3}, true), maximum(count, one));  // [B, H, 1, 1]
  }

  std::string shift_;
};

}  // namespace

RELPOS_REGISTER_FEATURE_MAP("sikf", SikfFeatureMap);

}  // namespace relpos
