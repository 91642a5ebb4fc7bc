// What the language-model tests share (test_language_models*.cpp): tiny configs of both LM types,
// building, random token streams, and a forward that returns the logits' values.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/models/model.h"

namespace relpos::test {

// A tiny LM: vocab 11, 2 layers, 2 heads, d 8, mlp 16, no dropout, max_len 32.
ModelConfig tiny_lm_config(const std::string& type, DType dtype = DType::f64);
std::shared_ptr<LanguageModel> build_lm(const ModelConfig& c, uint64_t seed = 7);
// ids in [0, vocab): [batch, len] i64, from `seed`.
Tensor random_tokens(int64_t batch, int64_t len, int64_t vocab, uint64_t seed);
// Columns [from, to) of tokens [B, L].
Tensor columns(const Tensor& tokens, int64_t from, int64_t to);

// The LM variants every generic test runs: a label, the model type, and the attention and
// positional mappings.
struct LmVariant {
  std::string label, type;
  std::vector<std::pair<std::string, std::string>> attention, positional;
};
const std::vector<LmVariant>& lm_variants();
ModelConfig variant_config(const LmVariant& v, DType dtype = DType::f64);

}  // namespace relpos::test
