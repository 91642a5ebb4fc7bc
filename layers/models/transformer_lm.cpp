// transformer_lm: the baseline the Transformer-XL paper compares against (Al-Rfou et al. 2018;
// Dai et al. 2019 §3.1, "vanilla model"): the LM shell (lm_transformer.h) with causal softmax
// attention and learned (or sinusoidal) absolute positions, and no memory: every segment is read
// on its own, so a character sees only the segment before it. Defaults as Vaswani et al.: post-LN
// with ReLU, no final LayerNorm (one after pre-LN blocks, as GPT-2). Own key: tie_weights.
#include "layers/models/lm_transformer.h"

namespace relpos {
namespace {

constexpr const char* kWho = "model";

struct TransformerLmConfig {
  bool tie_weights = true;  // the output layer is the embedding matrix (plus a bias)

  static TransformerLmConfig read(const ModelConfig& config) {
    TransformerLmConfig c;
    c.tie_weights = config.own.get<bool>("tie_weights", c.tie_weights);
    const std::string attention = config.attention.get<std::string>("type", "softmax");
    RELPOS_CHECK(attention == "softmax", kWho,
                 "transformer_lm is the softmax baseline; got attention '{}': use causal_lm for "
                 "other attention",
                 attention);
    RELPOS_CHECK(positional_type(config) == "none", kWho,
                 "transformer_lm has absolute positions only; remove model.positional (type '{}') "
                 "or use causal_lm",
                 positional_type(config));
    RELPOS_CHECK(config.positions == "learned" || config.positions == "sinusoidal", kWho,
                 "transformer_lm reads absolute positions: positions must be learned or "
                 "sinusoidal, got '{}'",
                 config.positions);
    return c;
  }
};

LmShell absolute_shell(const ModelConfig& c) {
  LmShell shell = causal_shell(c);  // no memory, no clamp_len, no same_length
  shell.tie_weights = TransformerLmConfig::read(c).tie_weights;
  return shell;
}

class TransformerLm final : public LmTransformer {
 public:
  static ModelType type() {
    return {TaskKind::language_modelling,
            "a causal Transformer with absolute positions and no memory (Transformer-XL's "
            "baseline)",
            {"relu", "post", "learned"},
            [](const ModelConfig& c) { TransformerLmConfig::read(c); },
            {}};
  }

  TransformerLm(const ModelConfig& c, Generator& gen) : LmTransformer(c, gen, absolute_shell(c)) {
    check_context(context());
  }
};

}  // namespace

RELPOS_REGISTER_MODEL("transformer_lm", TransformerLm);

}  // namespace relpos
