// dual_encoder: LRA Retrieval. One shared encoder runs over both documents; the pooled u, v meet
// as [u, v] ("concat", the LRA reference) or [u, v, u*v, u-v] ("features"), then
// Dense(mlp_dim) -> ReLU -> Dense(mlp_dim / 2) -> ReLU -> Dense(classes).
#include "autograd/functions.h"
#include "layers/models/encoder.h"

namespace relpos {
namespace {

class DualEncoderClassifier final : public Classifier {
 public:
  DualEncoderClassifier(const ModelConfig& c, Generator& gen) : Classifier(c) {
    encoder_ = register_module("encoder", std::make_shared<TransformerEncoder>(c, gen));
    const int64_t in = (c.combine == "features" ? 4 : 2) * c.model_dim;
    head_ = register_module(
        "head",
        std::make_shared<MlpHead>(std::vector<int64_t>{in, c.mlp_dim, c.mlp_dim / 2, c.num_classes},
                                  c.dtype, gen));
  }

  Var forward(const ClassifierInputs& inputs) override {
    RELPOS_CHECK(inputs.tokens.defined() && inputs.tokens2.defined(), "model",
                 "dual_encoder needs tokens and tokens2 (the two documents)");
    const Var u = encoder_->pool(encoder_->forward(inputs.tokens, inputs.key_mask));    // [B, d]
    const Var v = encoder_->pool(encoder_->forward(inputs.tokens2, inputs.key_mask2));  // [B, d]
    RELPOS_CHECK(u.size(0) == v.size(0), "model",
                 "dual_encoder: the two documents' batches differ ({} and {})", u.size(0),
                 v.size(0));
    const Var pair = config().combine == "concat" ? cat({u, v}, 1) : cat({u, v, u * v, u - v}, 1);
    return head_->forward(pair);  // [B, classes]
  }

  std::vector<std::string> warnings() const override { return encoder_->warnings("encoder"); }

 private:
  std::shared_ptr<TransformerEncoder> encoder_;
  std::shared_ptr<MlpHead> head_;
};

}  // namespace

RELPOS_REGISTER_MODEL("dual_encoder", DualEncoderClassifier);

}  // namespace relpos
