// Language-model test helpers (tests/layers/lm_testing.h).
#include "tests/layers/lm_testing.h"

#include "layers/attention/feature_map.h"
#include "tests/layers/attention_testing.h"

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
    std::vector<LmVariant> v = {
        {"transformer_xl", "transformer_xl", {}, {}},
        {"softmax + shaw", "causal_lm", {{"type", "softmax"}}, {{"type", "shaw"}, {"window", "3"}}},
        {"softmax + skew", "causal_lm", {{"type", "softmax"}}, {{"type", "skew"}}},
        {"softmax + fastrpb", "causal_lm", {{"type", "softmax"}}, {{"type", "fastrpb"}}},
        {"softmax + sinspe",
         "causal_lm",
         {{"type", "softmax"}},
         {{"type", "sinspe"}, {"num_realizations", "4"}, {"num_sines", "2"}}},
        {"softmax + convspe",
         "causal_lm",
         {{"type", "softmax"}},
         {{"type", "convspe"}, {"num_realizations", "4"}, {"kernel_size", "3"}}},
    };
    // Linear attention with every feature map of the registry, alone and with FastRPB; the
    // maps that keep the head size also with shaw (linear cost).
    for (const std::string& map : feature_map_registry().names()) {
      std::vector<std::pair<std::string, std::string>> attention{{"type", "linear"},
                                                                 {"feature_map", map}};
      if (map == "performer") attention.push_back({"num_features", "4"});
      v.push_back({"linear " + map, "causal_lm", attention, {}});
      v.push_back({"linear " + map + " + fastrpb", "causal_lm", attention, {{"type", "fastrpb"}}});
      if (map != "dpfp")
        v.push_back({"linear " + map + " + shaw",
                     "causal_lm",
                     attention,
                     {{"type", "shaw"}, {"window", "2"}}});
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
