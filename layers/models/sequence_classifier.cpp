// sequence_classifier: one encoder, pooled (CLS row or masked mean), then a head. LRA ListOps /
// Text / Image (head "mlp": Dense(mlp_dim) -> ReLU -> Dense(classes)) and the BERT-style MNIST
// model (head "tanh": the pooler Dense(model_dim) + tanh, then the classifier Dense(classes)).
#include "autograd/functions.h"
#include "layers/models/encoder.h"

namespace relpos {
namespace {

class SequenceClassifier final : public Classifier {
 public:
  static ModelType type() {
    return {TaskKind::classification,
            "one encoder, pooled, then a head (LRA ListOps / Text / Image, MNIST)",
            {"gelu", "pre", "learned"},
            [](const ModelConfig& c) { ClassifierConfig::read(c); },
            {}};
  }

  SequenceClassifier(const ModelConfig& c, Generator& gen)
      : Classifier(c), keys_(ClassifierConfig::read(c)) {
    const ClassifierConfig& k = keys_;
    k.check_sizes(c);
    encoder_ = register_module("encoder", std::make_shared<TransformerEncoder>(c, k, gen));
    if (k.head == "mlp") {
      head_ = register_module(
          "head", std::make_shared<MlpHead>(
                      std::vector<int64_t>{c.model_dim, c.mlp_dim, k.num_classes}, c.dtype, gen));
    } else {  // tanh
      pooler_ = register_module(
          "pooler", std::make_shared<Linear>(c.model_dim, c.model_dim, true, c.dtype, gen));
      classifier_ = register_module(
          "classifier", std::make_shared<Linear>(c.model_dim, k.num_classes, true, c.dtype, gen));
    }
  }

  Var forward(const ClassifierInputs& inputs) override {
    RELPOS_CHECK(inputs.tokens.defined(), "model", "sequence_classifier needs tokens");
    const Var pooled = encoder_->pool(encoder_->forward(inputs.tokens, inputs.key_mask));  // [B, d]
    if (head_ != nullptr) return head_->forward(pooled);  // [B, classes]
    return classifier_->forward(tanh(pooler_->forward(pooled)));
  }

  int64_t num_classes() const override { return keys_.num_classes; }
  SpecialTokens special_tokens() const override { return encoder_->special_tokens(); }
  std::string whole_examples_reader() const override { return encoder_->whole_images_reader(); }
  std::vector<std::string> warnings() const override { return encoder_->warnings("encoder"); }

 private:
  ClassifierConfig keys_;
  std::shared_ptr<TransformerEncoder> encoder_;
  std::shared_ptr<MlpHead> head_;
  std::shared_ptr<Linear> pooler_, classifier_;
};

}  // namespace

RELPOS_REGISTER_MODEL("sequence_classifier", SequenceClassifier);

}  // namespace relpos
