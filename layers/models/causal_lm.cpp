// causal_lm: the LM shell of transformer_xl (lm_transformer.h) with any attention of the registry
// built causally, so the efficient layers meet Transformer-XL on its own task: softmax (with
// absolute positions when there is no memory), linear attention with every feature map (prefix
// sums, O(N) memory), and relative encodings (shaw, skew, causal fastrpb, sinspe, convspe) that
// measure distances across [memory; segment]. No embedding scale; a final LayerNorm after pre-LN
// blocks (as GPT-2), none after post-LN ones (as Transformer-XL).
#include "layers/models/lm_transformer.h"

namespace relpos {
namespace {

constexpr const char* kWho = "model";

// causal_lm's keys: the shell's, and recurrent_state (linear attention's running sums
// Σ phi(k) v^T, Σ phi(k) carried from segment to segment instead of hidden states: the whole
// past, exactly, in memory fixed in length).
struct CausalLmConfig : LmConfig {
  bool recurrent_state = false;

  static CausalLmConfig read(const ModelConfig& config) {
    CausalLmConfig c{LmConfig::read(config)};
    c.recurrent_state = config.own.get<bool>("recurrent_state", c.recurrent_state);
    RELPOS_CHECK(config.attention.get<std::string>("type", "softmax") != "rel_xl", kWho,
                 "causal_lm with rel_xl attention is Transformer-XL: use model.type "
                 "transformer_xl (shared u, v, clamp_len, same_length)");
    if (config.index_first)
      refuse_index_first_unless(!c.recurrent_state,
                                "a memory holds hidden states, not token ids: set mem_len: 0");
    return c;
  }
};

LmShell causal_lm_shell(const ModelConfig& c) {
  const CausalLmConfig k = CausalLmConfig::read(c);
  LmShell shell = causal_shell(c);
  shell.context = {k.mem_len, 0, false};
  shell.tie_weights = k.tie_weights;
  shell.recurrent_state = k.recurrent_state;
  return shell;
}

class CausalLm final : public LmTransformer {
 public:
  static ModelType type() {
    return {TaskKind::language_modelling,
            "the LM shell with any attention of the registry, built causally",
            {"relu", "post", "none"},
            [](const ModelConfig& c) { CausalLmConfig::read(c); },
            {}};
  }

  CausalLm(const ModelConfig& c, Generator& gen) : LmTransformer(c, gen, causal_lm_shell(c)) {
    check_context(context());
    if (!carries_recurrent_state()) return;
    const Attention& attention = layers().at<EncoderBlock>(0)->attention().attention();
    RELPOS_CHECK(
        attention.caps().carries_state && positional_type(c) == "none" && c.positions == "none",
        kWho,
        "recurrent_state carries linear attention's running sums over the whole past; it "
        "needs attention 'linear' with a feature map that does not depend on positions, "
        "without positional encodings or absolute positions, got attention '{}', "
        "positional '{}', positions '{}'",
        attention.name(), positional_type(c), c.positions);
  }

  std::vector<std::string> warnings() const override {
    const ModelConfig& c = config();
    const Attention& attention = layers().at<EncoderBlock>(0)->attention().attention();
    if (c.positions != "none" || positional_type(c) != "none" || attention.caps().uses_positions)
      return {};
    return {fmt::format(
        "[model] causal_lm has no positions (positions: none, no positional encoding, and an "
        "attention that does not use them): only the causal mask tells its {} attention the "
        "order of tokens",
        attention.name())};
  }

 protected:
  void check_context(const LmContext& context) const override {
    LmTransformer::check_context(context);
    RELPOS_CHECK(!carries_recurrent_state() || context.mem_len == 0, kWho,
                 "recurrent_state already carries the whole past: mem_len must be 0, got {}",
                 context.mem_len);
  }
};

}  // namespace

RELPOS_REGISTER_MODEL("causal_lm", CausalLm);

}  // namespace relpos
