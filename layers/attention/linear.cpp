// linear: kernelized attention (Katharopoulos et al. 2020 §3.2; seed 002 §2.2 eq. 3),
//   Y_i = (sum_j s_ij v_j + A_i) / (sum_j s_ij + b_i + eps),  s_ij = phi(q_i)·phi(k_j),
// over the keys query i sees (padding keys are zeroed in phi(K)), where {A_i, b_i} are a
// positional encoding's kernel terms {S_rel·V, S_rel·1} (seed 003 §IV; zero without one). phi is
// the feature map's definition, unshifted: the exponential maps hand over phi(q) e^(-c_q) and
// phi(k) e^(-c_k) (feature_map.h), which scales sum_j s_ij by e^(-c_q - c_k) but A_i, b_i (linear
// in phi(q), without key features) only by e^(-c_q); rescale() puts the kernel terms and eps on
// the same scale, so the ratio is exactly the formula above, as fast-transformers'
// LinearAttention computes it without any shift. Algorithms:
// bidirectional keeps phi(K)^T V [F, Dv]; causal reads prefix sums of phi(k_j) ⊗ v_j at query i's
// last key i + Lk - Lq (seed 003 conclusion), O(N F Dv) memory; quadratic forms the masked
// phi(Q) phi(K)^T [Lq, Lk]. `auto` picks the smaller by seed 003 §IV's memory estimates.
// Options: feature_map (elu1) and its own options, eps (1e-6), algorithm (auto|linear|quadratic).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/functions.h"
#include "layers/attention/attention.h"
#include "layers/attention/feature_map.h"
#include "layers/attention/masks.h"
#include "layers/attention/positional.h"

namespace relpos {
namespace {

// x: [B, H, Lk, ...] prefix sums -> [B, H, Lq, ...], row i holding prefix i + Lk - Lq (the last
// key query i sees), zeros where that index is negative (the query sees no key).
Var align_prefix(const Var& x, int64_t q_len) {
  const int64_t k_len = x.size(2);
  if (q_len <= k_len) return slice(x, 2, k_len - q_len, k_len);
  std::vector<int64_t> pads(2 * (x.dim() - 2), 0);
  pads[2 * (x.dim() - 3)] = q_len - k_len;  // before dim 2
  return pad(x, pads);
}

// How the three parts of the denominator (and numerator) weigh against each other when the
// features were shifted (feature_map.h): the sums carry e^(-c_q - c_k), the kernel terms only
// e^(-c_q), so relative to the sums the terms need e^(-c_k) and eps e^(-c_q - c_k). Each factor is
// divided by the largest of them per query, so none overflows and the largest is 1; eps's is
// floored at the dtype's smallest normal number, so a query that sees no key divides 0 by a
// positive number.
struct Rescale {
  Var sums, terms, eps;  // broadcastable to [B, H, Lq, 1]
};

Rescale rescale(const Features& phi, bool with_terms, double eps) {
  const DType dtype = phi.q.dtype();
  const Device device = phi.q.value().device();
  const Tensor zero = zeros({1}, dtype, device);
  const Tensor c_q = phi.q_shift.defined() ? phi.q_shift : zero;  // [B, H, Lq, 1]
  const Tensor c_k = phi.k_shift.defined() ? phi.k_shift : zero;  // [B, H, 1, 1]
  const Tensor log_terms = neg(c_k);
  const Tensor log_eps = add_scalar(neg(add(c_q, c_k)), std::log(eps));
  Tensor top = maximum(log_eps, zero);  // [B, H, Lq, 1]
  if (with_terms) top = maximum(top, log_terms);
  const double smallest =
      dtype == DType::f64 ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  const Tensor floor = full({1}, std::log(smallest), dtype, device);
  return {Var(exp(neg(top))), Var(exp(sub(log_terms, top))),
          Var(exp(maximum(sub(log_eps, top), floor)))};
}

class LinearAttention final : public Attention {
 public:
  explicit LinearAttention(const AttentionOptions& opt)
      : feature_map_(register_module("feature_map", make_feature_map(opt, "elu1"))),
        feature_dim_(feature_map_->feature_dim(opt.head_dim)),
        eps_(opt.options.get<double>("eps", 1e-6)),
        algorithm_(opt.options.get<std::string>("algorithm", "auto")) {
    RELPOS_CHECK(eps_ > 0, "attention linear", "eps must be > 0, got {}", eps_);
    RELPOS_CHECK(algorithm_ == "auto" || algorithm_ == "linear" || algorithm_ == "quadratic",
                 "attention linear", "algorithm must be auto, linear or quadratic, got '{}'",
                 algorithm_);
  }

  Var forward(const Var& q, const Var& k, const Var& v, const AttentionInputs& in) override {
    const AttentionDims d = check_attention_inputs("attention linear", q, k, v, in);
    RELPOS_CHECK(in.window == 0, "attention linear",
                 "an attention window ({} keys) is not supported: the prefix sums reach every "
                 "earlier key",
                 in.window);
    Features phi = feature_map_->forward(q, k, in);
    const Var& phi_q = phi.q;  // [B, H, Lq, F]
    Var phi_k = phi.k;         // [B, H, Lk, F]
    if (in.key_mask.defined()) phi_k = phi_k * Var(key_keep_column(in.key_mask, phi_k.dtype()));
    const Carried past = carried(in, d, phi, phi_k);  // may move phi.k_shift and phi_k's scale
    Var num, den;                                     // [B, H, Lq, Dv], [B, H, Lq, 1]
    if (quadratic(d, phi_q.size(3), in.causal)) {
      Var a = matmul(phi_q, phi_k, false, true);  // [B, H, Lq, Lk]
      if (in.causal) {
        const Tensor blocked = causal_blocked(d.q_len, d.k_len, q.value().device());
        a = masked_fill(a, blocked.reshape({1, 1, d.q_len, d.k_len}), 0.0);
      }
      num = matmul(a, v);
      den = sum(a, {3}, true);
    } else if (in.causal) {
      Var kv = cumsum(unsqueeze(phi_k, 4) * unsqueeze(v, 3), 2);  // [B, H, Lk, F, Dv]
      kv = align_prefix(kv, d.q_len);                             // [B, H, Lq, F, Dv]
      const Var z = align_prefix(cumsum(phi_k, 2), d.q_len);      // [B, H, Lq, F]
      num = squeeze(matmul(unsqueeze(phi_q, 3), kv), 3);
      den = sum(phi_q * z, {3}, true);
    } else {
      const Var kv = matmul(phi_k, v, true, false);  // [B, H, F, Dv]
      const Var z = sum(phi_k, {2}, true);           // [B, H, 1, F]
      num = matmul(phi_q, kv);
      den = matmul(phi_q, z, false, true);
    }
    if (past.sum.defined()) {  // the keys of earlier segments: every query sees them all
      num = num + matmul(phi_q, Var(past.sum));
      den = den + matmul(phi_q, Var(past.norm), false, true);
    }
    if (in.carry != nullptr) {  // the running sums after this segment, for the next one
      const Tensor sum_now = matmul(phi_k.value(), v.value(), true, false);  // [B, H, F, Dv]
      const Tensor norm_now = sum(phi_k.value(), {2}, true);                 // [B, H, 1, F]
      in.carry->out["sum"] = past.sum.defined() ? add(past.sum, sum_now) : sum_now;
      in.carry->out["norm"] = past.norm.defined() ? add(past.norm, norm_now) : norm_now;
      if (phi.k_shift.defined()) in.carry->out["shift"] = phi.k_shift;
    }
    Var term_num, term_den;  // [B, H, Lq, Dv], [B, H, Lq, 1]
    if (in.positional != nullptr) {
      std::tie(term_num, term_den) = in.positional->kernel_terms(phi_q, v, in);
      RELPOS_CHECK(term_num.defined() == term_den.defined(), "attention linear",
                   "positional '{}' gave one kernel term without the other", in.positional->name());
    }
    if (!phi.q_shift.defined() && !phi.k_shift.defined()) {
      if (term_num.defined()) {
        num = num + term_num;
        den = den + term_den;
      }
      return num / (den + eps_);  // [B, H, Lq, Dv]
    }
    const Rescale r = rescale(phi, term_num.defined(), eps_);
    num = num * r.sums;
    den = den * r.sums;
    if (term_num.defined()) {
      num = num + term_num * r.terms;
      den = den + term_den * r.terms;
    }
    return num / (den + r.eps);  // [B, H, Lq, Dv]
  }

  AttentionCaps caps() const override {
    return {.forms_scores = false,
            .kernelized = true,
            .feature_dim = feature_dim_,
            .carries_state = !feature_map_->uses_positions()};
  }
  std::string name() const override { return "linear"; }

 private:
  // The running sums of earlier segments (in.carry), S = Σ phi(k_j) v_j^T [B, H, F, Dv] and
  // Σ phi(k_j) [B, H, 1, F], put on one key scale with this segment's features: with the carried
  // shift c' and this segment's c_k, both move to c = max(c', c_k) (phi_k times e^(c_k - c), the
  // sums times e^(c' - c), phi.k_shift = c), so together they are the features of one pass over
  // the whole stream. Undefined sums: no past.
  struct Carried {
    Tensor sum, norm;
  };
  Carried carried(const AttentionInputs& in, const AttentionDims& d, Features& phi,
                  Var& phi_k) const {
    if (in.carry == nullptr) return {};
    RELPOS_CHECK(
        in.causal && d.q_len == d.k_len && !in.key_mask.defined() && in.positional == nullptr,
        "attention linear",
        "carrying the running sums across segments needs causal self attention over one "
        "unpadded segment without a positional encoding");
    RELPOS_CHECK(!feature_map_->uses_positions(), "attention linear",
                 "feature map '{}' depends on positions, which restart with every segment: its "
                 "running sums cannot be carried",
                 feature_map_->name());
    const auto& past = in.carry->in;
    if (past.empty()) return {};
    Carried c{past.at("sum"), past.at("norm")};
    const auto shift = past.find("shift");
    if (shift == past.end() || !phi.k_shift.defined()) return c;
    const Tensor common = maximum(shift->second, phi.k_shift);  // [B, H, 1, 1]
    phi_k = phi_k * Var(exp(sub(phi.k_shift, common)));
    const Tensor old_scale = exp(sub(shift->second, common));
    c.sum = mul(c.sum, old_scale);
    c.norm = mul(c.norm, old_scale);
    phi.k_shift = common;
    return c;
  }

  // Whether the [Lq, Lk] matrix is the smaller intermediate (seed 003 §IV): Lq Lk against
  // F Dv max(Lq, Lk) for causal prefix sums, F Dv for the bidirectional state.
  bool quadratic(const AttentionDims& d, int64_t features, bool causal) const {
    if (algorithm_ != "auto") return algorithm_ == "quadratic";
    const int64_t state = features * d.value_dim * (causal ? std::max(d.q_len, d.k_len) : 1);
    return d.q_len * d.k_len < state;
  }

  std::shared_ptr<FeatureMap> feature_map_;
  int64_t feature_dim_;  // F for the head size the layer was built with
  double eps_;
  std::string algorithm_;
};

}  // namespace

RELPOS_REGISTER_ATTENTION("linear", LinearAttention);

}  // namespace relpos
