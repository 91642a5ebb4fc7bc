// transformer_xl: the character language model of Dai et al. 2019 (EXPERIMENTS.md
// "Transformer-XL"): the LM shell (lm_transformer.h) with rel_xl attention in every layer, the
// token embedding scaled by sqrt(d_model), u and v ("r_w_bias", "r_r_bias" [H, d_head]) shared by
// all layers unless untie_r, relative distances clamped at clamp_len, same_length, post-LN by
// default and no final LayerNorm, as the reference MemTransformerLM (attn_type 0), whose dropout
// on the sinusoidal distance embedding it applies too (model.distance_dropout, by default
// model.dropout; one mask per forward pass, shared by the layers: DistanceDropout).
// Parameter names against MemTransformerLM (docs/language-models.md has the whole mapping):
// embedding.weight = word_emb.emb_layers.0.weight, layers.i.attn.{q,k,v}_proj.weight stacked =
// layers.i.dec_attn.qkv_net.weight, output.bias = crit.out_layers.0.bias.
#include <cmath>

#include "layers/attention/rel_xl.h"
#include "layers/models/lm_transformer.h"

namespace relpos {
namespace {

constexpr const char* kWho = "model";

// transformer_xl's keys: the shell's, clamp_len (distances above it use its embedding; 0: none),
// same_length (every query sees exactly mem_len keys), untie_r (one u, v pair per layer) and
// distance_dropout (on the sinusoidal distance embedding; default: model.dropout, as the
// reference).
struct TransformerXlConfig : LmConfig {
  int64_t clamp_len = 0;
  bool same_length = false;
  bool untie_r = false;
  double distance_dropout = 0;

  static TransformerXlConfig read(const ModelConfig& config) {
    TransformerXlConfig c{LmConfig::read(config)};
    check_model_probability("dropout", config.dropout);  // named before the default it gives
    c.distance_dropout = config.own.get_inherited<double>("distance_dropout", config.dropout);
    check_model_probability("distance_dropout", c.distance_dropout);
    c.clamp_len = config.own.get_size("clamp_len", c.clamp_len, 0);
    c.same_length = config.own.get<bool>("same_length", c.same_length);
    c.untie_r = config.own.get<bool>("untie_r", c.untie_r);
    const std::string type = config.attention.get<std::string>("type", "rel_xl");
    RELPOS_CHECK(type == "rel_xl", kWho,
                 "transformer_xl runs rel_xl attention (its relative positions); got attention "
                 "'{}': use causal_lm for other attention",
                 type);
    const std::string positional = positional_type(config);
    RELPOS_CHECK(positional == "none", kWho,
                 "transformer_xl has its own relative positions; remove model.positional (type "
                 "'{}') or use causal_lm",
                 positional);
    RELPOS_CHECK(!config.attention.has("clamp_len"), kWho,
                 "transformer_xl takes clamp_len from model.clamp_len, not from model.attention");
    RELPOS_CHECK(config.positions == "none", kWho,
                 "transformer_xl has relative positions only: positions must be 'none', got '{}'",
                 config.positions);
    if (config.index_first)
      refuse_index_first_unless(false, "it computes softmax attention, got attention 'rel_xl'");
    return c;
  }
};

LmShell rel_xl_shell(const ModelConfig& c, const TransformerXlConfig& k) {
  LmShell shell;
  // with(): the user's mapping stays as written, and its reads are still recorded there.
  // clamp_len is the model's (the context sets it), so the layer's is not a default of its own.
  shell.attention = c.attention.with("type", "rel_xl").with("clamp_len", scalar_text(k.clamp_len));
  shell.embedding_scale = std::sqrt(static_cast<double>(c.model_dim));
  shell.context = {k.mem_len, k.clamp_len, k.same_length};
  shell.clamps = true;
  shell.tie_weights = k.tie_weights;
  return shell;
}

class TransformerXl final : public LmTransformer {
 public:
  static ModelType type() {
    return {TaskKind::language_modelling,
            "Transformer-XL: rel_xl blocks with segment memory (Dai et al. 2019)",
            {"relu", "post", "none"},
            [](const ModelConfig& c) { TransformerXlConfig::read(c); },
            {}};
  }

  TransformerXl(const ModelConfig& c, Generator& gen)
      : TransformerXl(c, gen, TransformerXlConfig::read(c)) {}

  TransformerXl(const ModelConfig& c, Generator& gen, const TransformerXlConfig& k)
      : LmTransformer(c, gen, rel_xl_shell(c, k)) {
    check_context(context());
    apply_context(context());
    if (k.distance_dropout > 0) {  // built last: the initial parameters stay as they were
      auto dropout = register_module("distance_dropout",
                                     std::make_shared<DistanceDropout>(k.distance_dropout, gen));
      for (size_t i = 0; i < layers().size(); ++i)
        attention_of(i).share_distance_dropout(dropout, i == 0);
    }
    if (k.untie_r) return;
    // One u and one v for every layer (the reference's r_w_bias, r_r_bias), N(0, 0.02).
    auto& first = attention_of(0);
    r_w_bias_ = Var(first.r_w_bias().value().clone(), true);
    r_r_bias_ = Var(first.r_r_bias().value().clone(), true);
    register_parameter("r_w_bias", r_w_bias_);
    register_parameter("r_r_bias", r_r_bias_);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const std::string prefix = "layers." + std::to_string(i) + ".attn.attention.";
      tie_parameter(prefix + "r_w_bias", r_w_bias_);
      tie_parameter(prefix + "r_r_bias", r_r_bias_);
    }
  }

 protected:
  void apply_context(const LmContext& context) override {
    for (size_t i = 0; i < layers().size(); ++i) attention_of(i).set_clamp_len(context.clamp_len);
  }

 private:
  RelXlAttention& attention_of(size_t layer) const {
    return dynamic_cast<RelXlAttention&>(layers().at<EncoderBlock>(layer)->attention().attention());
  }

  Var r_w_bias_, r_r_bias_;  // [H, d_head], shared by the layers unless untie_r
};

}  // namespace

RELPOS_REGISTER_MODEL("transformer_xl", TransformerXl);

}  // namespace relpos
