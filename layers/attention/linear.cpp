// linear: kernelized attention (Katharopoulos et al. 2020 §3.2; seed 002 §2.2 eq. 3),
//   Y_i = (sum_j s_ij v_j + A_i) / (sum_j s_ij + b_i + eps),  s_ij = phi(q_i)·phi(k_j),
// over the keys query i sees (padding keys are zeroed in phi(K)), where {A_i, b_i} are a
// positional encoding's kernel terms {S_rel·V, S_rel·1} (seed 003 §IV; zero without one). phi is
// the feature map's definition, unshifted: the exponential maps hand over phi(q) e^(-c_q) and
// phi(k) e^(-c_k) (feature_map.h), which scales sum_j s_ij by e^(-c_q - c_k) but A_i, b_i (linear
// in phi(q), without key features) only by e^(-c_q); rescale() puts the kernel terms and eps on
// the same scale, so the ratio is exactly the formula above, as fast-transformers'
// LinearAttention computes it without any shift. Algorithms:
// bidirectional keeps phi(K)^T V [F, Dv]; causal works by chunks of C positions (running sums of
// phi(k_j) v_j^T carried from chunk to chunk, the masked C x C products inside one), O(N C +
// (N / C) F Dv) memory instead of seed 003's prefix sums' O(N F Dv); quadratic forms the masked
// phi(Q) phi(K)^T [Lq, Lk]. `auto` picks the smaller by these memory estimates (seed 003 §IV).
// Options: feature_map (elu1) and its own options, eps (1e-6), algorithm (auto|linear|quadratic),
// chunk (64: C, the causal chunk length).
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

// Numerator and denominator sums before the kernel terms: [B, H, Lq, Dv], [B, H, Lq, 1].
struct Sums {
  Var num, den;
};

// Causal sums with queries and keys aligned one to one (query i sees keys 0..i; L = phi_q's
// length = phi_k's), by chunks of C: inside chunk c the masked products a_ij = phi(q_i)·phi(k_j),
// j <= i; from the chunks before it their state Σ phi(k_j) v_j^T [F, Dv] and Σ phi(k_j), an
// exclusive prefix sum over chunks. Memory O(L C + (L / C) F Dv).
Sums causal_by_chunks(const Var& phi_q, const Var& phi_k, const Var& v, int64_t chunk) {
  const int64_t B = phi_q.size(0), H = phi_q.size(1), L = phi_q.size(2), Dv = v.size(3);
  const Device device = phi_q.value().device();
  if (L == 0)
    return {Var(zeros({B, H, 0, Dv}, phi_q.dtype(), device)),
            Var(zeros({B, H, 0, 1}, phi_q.dtype(), device))};
  const int64_t n = (L + chunk - 1) / chunk, padded = n * chunk;
  const auto chunks = [&](const Var& x) {  // [B, H, L, E] -> [B, H, n, C, E], zeros after L
    const Var whole = padded > L ? pad(x, {0, 0, 0, padded - L}) : x;
    return reshape(whole, {B, H, n, chunk, x.size(3)});
  };
  const Var q = chunks(phi_q), k = chunks(phi_k), vc = chunks(v);
  const Tensor later = causal_blocked(chunk, chunk, device).reshape({1, 1, 1, chunk, chunk});
  const Var a = masked_fill(matmul(q, k, false, true), later, 0.0);  // [B, H, n, C, C]
  Var num = matmul(a, vc);                                           // [B, H, n, C, Dv]
  Var den = sum(a, {4}, true);                                       // [B, H, n, C, 1]
  if (n > 1) {
    const auto before = [n](const Var& per_chunk) {  // Σ over earlier chunks; 0 for chunk 0
      return pad(slice(cumsum(per_chunk, 2), 2, 0, n - 1), {0, 0, 0, 0, 1, 0});
    };
    num = num + matmul(q, before(matmul(k, vc, true, false)));      // states [B, H, n, F, Dv]
    den = den + matmul(q, before(sum(k, {3}, true)), false, true);  // norms [B, H, n, 1, F]
  }
  const auto rows = [&](const Var& x) {  // [B, H, n, C, E] -> [B, H, L, E]
    return slice(reshape(x, {B, H, padded, x.size(4)}), 2, 0, L);
  };
  return {rows(num), rows(den)};
}

// Causal sums for any Lq, Lk (query i sees keys j <= i + Lk - Lq): the keys before the queries'
// own segment are seen by every query (one F x Dv state); with more queries than keys the first
// Lq - Lk see nothing; the aligned rest goes by chunks.
Sums causal_sums(const Var& phi_q, const Var& phi_k, const Var& v, int64_t chunk) {
  const int64_t q_len = phi_q.size(2), k_len = phi_k.size(2), before = k_len - q_len;
  if (before < 0) {
    const Sums s = causal_by_chunks(slice(phi_q, 2, -before, q_len), phi_k, v, chunk);
    return {pad(s.num, {0, 0, -before, 0}), pad(s.den, {0, 0, -before, 0})};
  }
  Sums s =
      causal_by_chunks(phi_q, slice(phi_k, 2, before, k_len), slice(v, 2, before, k_len), chunk);
  if (before > 0) {
    const Var memory_k = slice(phi_k, 2, 0, before), memory_v = slice(v, 2, 0, before);
    s.num = s.num + matmul(phi_q, matmul(memory_k, memory_v, true, false));
    s.den = s.den + matmul(phi_q, sum(memory_k, {2}, true), false, true);
  }
  return s;
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

constexpr int64_t kDefaultChunk = 64;  // positions per chunk of causal attention

class LinearAttention final : public Attention {
 public:
  explicit LinearAttention(const AttentionOptions& opt)
      : feature_map_(register_module("feature_map", make_feature_map(opt, "elu1"))),
        feature_dim_(feature_map_->feature_dim(opt.head_dim)),
        eps_(opt.options.get<double>("eps", 1e-6)),
        algorithm_(opt.options.get<std::string>("algorithm", "auto")),
        chunk_(opt.options.get_size("chunk", kDefaultChunk)) {
    RELPOS_CHECK(eps_ > 0, "attention linear", "eps must be > 0, got {}", eps_);
    RELPOS_CHECK(algorithm_ == "auto" || algorithm_ == "linear" || algorithm_ == "quadratic",
                 "attention linear", "algorithm must be auto, linear or quadratic, got '{}'",
                 algorithm_);
    // Checkpoints of classifiers hold the default (their config.yaml lists every key read).
    RELPOS_CHECK(opt.direction != AttentionDirection::both_ways || chunk_ == kDefaultChunk,
                 "attention linear",
                 "chunk ({}) only applies to causal attention (a language model); this model "
                 "attends both ways",
                 chunk_);
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
      const Sums s = causal_sums(phi_q, phi_k, v, chunk_);
      num = s.num;
      den = s.den;
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
            .carries_state = !feature_map_->uses_positions(),
            .uses_positions = feature_map_->uses_positions(),
            .max_keys = feature_map_->max_keys()};
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
  // N C + F Dv N / C for causal chunks (N = max(Lq, Lk)), F Dv for the bidirectional state.
  bool quadratic(const AttentionDims& d, int64_t features, bool causal) const {
    if (algorithm_ != "auto") return algorithm_ == "quadratic";
    const int64_t n = std::max(d.q_len, d.k_len);
    const int64_t state = causal ? n * chunk_ + features * d.value_dim * ((n + chunk_ - 1) / chunk_)
                                 : features * d.value_dim;
    return d.q_len * d.k_len < state;
  }

  std::shared_ptr<FeatureMap> feature_map_;
  int64_t feature_dim_;  // F for the head size the layer was built with
  double eps_;
  std::string algorithm_;
  int64_t chunk_;
};

}  // namespace

RELPOS_REGISTER_ATTENTION("linear", LinearAttention);

}  // namespace relpos
