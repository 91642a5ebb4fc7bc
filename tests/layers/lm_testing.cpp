// Language-model test helpers (tests/layers/lm_testing.h).
#include "tests/layers/lm_testing.h"

#include "layers/attention/catalog.h"
#include "tests/layers/attention_testing.h"
#include "tests/layers/linear_naive.h"

namespace relpos::test {

ModelConfig tiny_lm_config(const std::string& type, DType dtype) {
  ModelConfig c;
  c.type = type;
  c.vocab_size = 11;
  c.max_len = 32;
  c.num_layers = 2;
  c.num_heads = 2;
  c.model_dim = 8;
  c.mlp_dim = 16;
  c.dropout = 0;
  c.attention_dropout = 0;
  c.dtype = dtype;
  return c;
}

std::shared_ptr<LanguageModel> build_lm(const ModelConfig& c, uint64_t seed) {
  Generator gen(seed);
  return make_language_model(c, gen);
}

Tensor random_tokens(int64_t batch, int64_t len, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  const Tensor u = rand({batch, len}, gen, 0, static_cast<double>(vocab), DType::f64);
  return cast(u, DType::i64);  // truncation: uniform over 0 .. vocab - 1
}

Tensor columns(const Tensor& tokens, int64_t from, int64_t to) {
  return tokens.slice(1, from, to).contiguous();
}

const std::vector<LmVariant>& lm_variants() {
  static const std::vector<LmVariant> all = [] {
    std::vector<LmVariant> v = {{"transformer_xl", "transformer_xl", {}, {}}};
    // causal_lm with every registered variant in its causal form (kernelized ones with each
    // feature map in its twin's first, small case), alone and with every registered encoding;
    // what causal_lm refuses to build is left out (its refusals have their own test).
    for (const AttentionSetup& host : attention_setups(false)) {
      if (!host.causal) continue;
      const std::string type = host.attention.get<std::string>("type", "");
      Kv attention{{"type", type}};
      if (host.attention.has("feature_map")) {
        const std::string map = host.attention.get<std::string>("feature_map", "");
        attention = map_options(map, naive_feature_map_twin(map).cases.front());
        attention.insert(attention.begin(), {"type", type});
      }
      std::vector<std::string> encodings{""};
      for (const std::string& name : positional_names()) encodings.push_back(name);
      for (const std::string& positional : encodings) {
        LmVariant lm{host.name + (positional.empty() ? "" : " + " + positional), "causal_lm",
                     attention, positional.empty() ? Kv{} : Kv{{"type", positional}}};
        try {
          build_lm(variant_config(lm, DType::f64));
        } catch (const Error&) {
          continue;
        }
        v.push_back(lm);
      }
    }
    return v;
  }();
  return all;
}

ModelConfig variant_config(const LmVariant& v, DType dtype) {
  ModelConfig c = tiny_lm_config(v.type, dtype);
  if (!v.attention.empty()) c.attention = options("model.attention", v.attention);
  if (!v.positional.empty()) c.positional = options("model.positional", v.positional);
  return c;
}

}  // namespace relpos::test
