// The attention, positional-encoding and feature-map registries, their builders, and the input
// checks every variant shares (layers/attention/attention.h).
#include "layers/attention/attention.h"

#include "layers/attention/feature_map.h"
#include "layers/attention/positional.h"
#include "layers/init.h"

namespace relpos {

Generator& AttentionOptions::generator() const {
  return gen != nullptr ? *gen : default_generator();
}

// Function-local statics: registrations from other files' static initializers may run first.
AttentionRegistry& attention_registry() {
  static AttentionRegistry registry("attention");
  return registry;
}
PositionalRegistry& positional_registry() {
  static PositionalRegistry registry("positional");
  return registry;
}
FeatureMapRegistry& feature_map_registry() {
  static FeatureMapRegistry registry("feature_map");
  return registry;
}

std::shared_ptr<Attention> make_attention(const AttentionOptions& opt) {
  auto type = opt.options.get<std::string>("type", "softmax");
  auto attention = attention_registry().make(type, opt);
  opt.options.check_all_used();
  return attention;
}

void check_grid(const char* who, const std::vector<int64_t>& grid, const char* hint) {
  const bool sizes = grid.size() == 2 && grid[0] > 0 && grid[1] > 0;
  RELPOS_CHECK(sizes && checked_numel(grid).value_or(kLargestSize + 1) <= kLargestSize, who,
               "grid must be [rows, cols] with positive sizes and at most 2^40 pixels, got [{}]{}",
               fmt::join(grid, ", "), hint);
}

std::shared_ptr<Positional> make_positional(const AttentionOptions& opt) {
  auto type = opt.options.get<std::string>("type", "none");
  if (type == "none") {
    opt.options.check_all_used();
    return nullptr;
  }
  auto positional = positional_registry().make(type, opt);
  opt.options.check_all_used();
  return positional;
}

std::shared_ptr<FeatureMap> make_feature_map(const AttentionOptions& opt,
                                             const std::string& fallback) {
  return feature_map_registry().make(opt.options.get<std::string>("feature_map", fallback), opt);
}

AttentionDims check_attention_inputs(const char* variant, const Var& q, const Var& k, const Var& v,
                                     const AttentionInputs& in) {
  RELPOS_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, variant,
               "q, k, v must be [batch, heads, length, dim], got q {} k {} v {}", q.value().str(),
               k.value().str(), v.value().str());
  AttentionDims d{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
  RELPOS_CHECK(k.size(0) == d.batch && v.size(0) == d.batch && k.size(1) == d.heads &&
                   v.size(1) == d.heads && k.size(3) == d.head_dim && v.size(2) == d.k_len,
               variant,
               "q [B, H, Lq, D], k [B, H, Lk, D] and v [B, H, Lk, Dv] disagree: q {} k {} v {}",
               q.value().str(), k.value().str(), v.value().str());
  RELPOS_CHECK(k.value().device() == q.value().device() && v.value().device() == q.value().device(),
               variant, "q, k and v must be on one device");
  RELPOS_CHECK(!in.causal || in.query_start < 0 || in.query_start == d.k_len - d.q_len, variant,
               "causal attention aligns the queries with the last keys: query_start must be "
               "Lk - Lq = {}, got {}",
               d.k_len - d.q_len, in.query_start);
  RELPOS_CHECK(in.window >= 0 && (in.window == 0 || in.causal), variant,
               "window must be >= 0 and needs causal attention, got window {} (causal {})",
               in.window, in.causal);
  if (in.key_mask.defined()) {
    const Tensor& m = in.key_mask;
    RELPOS_CHECK(m.dim() == 2 && m.size(0) == d.batch && m.size(1) == d.k_len, variant,
                 "key_mask must be [batch, keys] = [{}, {}], got {}", d.batch, d.k_len, m.str());
    RELPOS_CHECK(m.dtype() == DType::u8, variant, "key_mask must be u8, got {}", m.str());
    RELPOS_CHECK(m.device() == q.value().device(), variant, "key_mask must be on the device of q");
  }
  return d;
}

}  // namespace relpos
