// sikf: phi(x) = exp(x) (seed 002 §3.1 eq. 9, "shift-invariant kernel function"); F = D. The
// features are returned shifted so exp cannot overflow, phi(q) e^(-c_q) and phi(k) e^(-c_k)
// (feature_map.h: the attention undoes the shifts where they do not cancel, so the result is
// that of the unshifted exp). `sikf_shift`:
//   max (default): c_q the max of each query, c_k one max per (b, h) over real keys: every
//     exponent is <= 0, so exp never overflows however large the spread (e.g. q in [0, 1000]);
//     keys far below the (b, h) maximum (about 87 in f32, 745 in f64) underflow to 0 and drop
//     out, which changes the output only for spreads far beyond trained ranges;
//   mean: the reference's one scalar per (b, h), c = mean(q) + mean(k over real keys), for both
//     q and k; it centres the values but overflows once they spread beyond ~88 (f32) or ~700
//     (f64) above the mean: Inf, then NaN.
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

  Features forward(const Var& q, const Var& k, const AttentionInputs& in) override {
    const Tensor padding = padding_rows(in.key_mask);  // [B, 1, Lk, 1] or undefined
    Tensor q_shift, k_shift;                           // [B, H, Lq, 1], [B, H, 1, 1]
    if (shift_ == "max") {
      q_shift = max(q.value(), {3}, true);
      k_shift = max_over_real_keys(k.value(), padding);
    } else {
      k_shift = add(mean(q.value(), {2, 3}, true), mean_over_real_keys(k.value(), in));
      q_shift = k_shift;
    }
    Var k_arg = k - Var(k_shift);  // [B, H, Lk, D]
    // Padding keys (dropped by the attention) get exp(0): finite, whatever their values.
    if (padding.defined()) k_arg = masked_fill(k_arg, padding, 0.0);
    return {exp(q - Var(q_shift)), exp(k_arg), q_shift, k_shift};
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
