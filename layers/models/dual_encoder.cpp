// dual_encoder: LRA Retrieval. One shared encoder runs over both documents; with interaction
// "cross_attention" each document then attends to the other once; the pooled u, v meet as [u, v]
// ("concat", the LRA reference) or [u, v, u*v, u-v] ("features"), then
// Dense(mlp_dim) -> ReLU -> Dense(mlp_dim / 2) -> ReLU -> Dense(classes).
#include "autograd/functions.h"
#include "layers/models/encoder.h"

namespace relpos {
namespace {

// Each document's hidden states attend to the other's (Lq != Lk), one layer for both directions,
// with the model's attention variant and positional encoding (both sequences counted from
// position 0, as seed 004's cross attention). Submodules ln, attn, dropout.
//   pre:  x' = x + drop(attn(ln(x), ln(y)))      post: x' = ln(x + drop(attn(x, y)))
class CrossInteraction : public Module {
 public:
  CrossInteraction(const EncoderConfig& c, const MultiHeadAttentionConfig& attention,
                   Generator& gen)
      : pre_norm_(c.norm == "pre") {
    ln_ = register_module("ln", std::make_shared<LayerNorm>(c.model_dim, 1e-5, true, c.dtype));
    attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(attention));
    const Positional* positional = attn_->positional();
    RELPOS_CHECK(positional == nullptr || !positional->relates_one_sequence(), "model",
                 "dual_encoder's cross attention relates two documents, and positional '{}' "
                 "relates positions of one sequence: use interaction none or another encoding "
                 "(skew, shaw, ...)",
                 positional->name());
    dropout_ = register_module("dropout", std::make_shared<Dropout>(c.dropout, gen));
  }

  // x [B, Lx, d] attends y [B, Ly, d] (y_mask [B, Ly] u8 or undefined) -> [B, Lx, d]
  Var forward(const Var& x, const Var& y, const Tensor& y_mask) {
    if (pre_norm_)
      return x + dropout_->forward(attn_->forward(ln_->forward(x), ln_->forward(y), y_mask));
    return ln_->forward(x + dropout_->forward(attn_->forward(x, y, y_mask)));
  }

 private:
  bool pre_norm_;
  std::shared_ptr<LayerNorm> ln_;
  std::shared_ptr<MultiHeadAttention> attn_;
  std::shared_ptr<Dropout> dropout_;
};

// The classifier keys, and how the two documents meet: combine "concat" [u, v] or "features"
// [u, v, u*v, u-v]; interaction "none" or "cross_attention" (before pooling, each document attends
// to the other once, with the model's attention and positional encoding, Lq != Lk).
struct DualEncoderConfig : ClassifierConfig {
  std::string combine = "concat";
  std::string interaction = "none";

  static DualEncoderConfig read(const ModelConfig& config) {
    DualEncoderConfig c{ClassifierConfig::read(config)};
    c.combine = config.own.get<std::string>("combine", c.combine);
    c.interaction = config.own.get<std::string>("interaction", c.interaction);
    check_model_choice("combine", c.combine, {"concat", "features"});
    check_model_choice("interaction", c.interaction, {"none", "cross_attention"});
    RELPOS_CHECK(c.head == "mlp", "model",
                 "dual_encoder has its own head (Dense(mlp_dim) -> ReLU -> Dense(mlp_dim / 2) -> "
                 "ReLU -> Dense(classes)); head must be 'mlp', got '{}'",
                 c.head);
    RELPOS_CHECK(config.mlp_dim >= 2, "model",
                 "dual_encoder needs mlp_dim >= 2 (its head has mlp_dim / 2 units), got {}",
                 config.mlp_dim);
    return c;
  }
};

class DualEncoderClassifier final : public Classifier {
 public:
  static ModelType type() {
    return {TaskKind::classification,
            "one shared encoder over two documents, then a head (LRA Retrieval)",
            {"gelu", "pre", "learned"},
            [](const ModelConfig& c) { DualEncoderConfig::read(c); },
            {}};
  }

  DualEncoderClassifier(const ModelConfig& c, Generator& gen)
      : Classifier(c), dual_(DualEncoderConfig::read(c)) {
    dual_.check_sizes(c);
    encoder_ = register_module("encoder", std::make_shared<TransformerEncoder>(c, dual_, gen));
    if (dual_.interaction == "cross_attention") {
      MultiHeadAttentionConfig attention = encoder_->attention_config();
      attention.gen = &gen;
      interaction_ =
          register_module("interaction", std::make_shared<CrossInteraction>(c, attention, gen));
    }
    const int64_t in = (dual_.combine == "features" ? 4 : 2) * c.model_dim;
    head_ = register_module(
        "head",
        std::make_shared<MlpHead>(
            std::vector<int64_t>{in, c.mlp_dim, c.mlp_dim / 2, dual_.num_classes}, c.dtype, gen));
  }

  Var forward(const ClassifierInputs& inputs) override {
    RELPOS_CHECK(inputs.tokens.defined() && inputs.tokens2.defined(), "model",
                 "dual_encoder needs tokens and tokens2 (the two documents)");
    EncoderOutput a = encoder_->forward(inputs.tokens, inputs.key_mask);    // [B, L1, d]
    EncoderOutput b = encoder_->forward(inputs.tokens2, inputs.key_mask2);  // [B, L2, d]
    RELPOS_CHECK(a.hidden.size(0) == b.hidden.size(0), "model",
                 "dual_encoder: the two documents' batches differ ({} and {})", a.hidden.size(0),
                 b.hidden.size(0));
    if (interaction_ != nullptr) {
      const Var a_to_b = interaction_->forward(a.hidden, b.hidden, b.key_mask);
      const Var b_to_a = interaction_->forward(b.hidden, a.hidden, a.key_mask);
      a.hidden = a_to_b;
      b.hidden = b_to_a;
    }
    const Var u = encoder_->pool(a), v = encoder_->pool(b);  // [B, d]
    const Var pair = dual_.combine == "concat" ? cat({u, v}, 1) : cat({u, v, u * v, u - v}, 1);
    return head_->forward(pair);  // [B, classes]
  }

  int64_t num_classes() const override { return dual_.num_classes; }
  SpecialTokens special_tokens() const override { return encoder_->special_tokens(); }
  std::string whole_examples_reader() const override { return encoder_->whole_images_reader(); }
  // A later cross attention carries every row to the pooled one: nothing is out of reach.
  std::vector<std::string> warnings() const override {
    return interaction_ != nullptr ? std::vector<std::string>{} : encoder_->warnings("encoder");
  }

 private:
  DualEncoderConfig dual_;
  std::shared_ptr<TransformerEncoder> encoder_;
  std::shared_ptr<CrossInteraction> interaction_;
  std::shared_ptr<MlpHead> head_;
};

}  // namespace

RELPOS_REGISTER_MODEL("dual_encoder", DualEncoderClassifier);

}  // namespace relpos
