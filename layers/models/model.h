// Models (DESIGN §4, EXPERIMENTS.md "Model details"): the classifiers the experiments train, built
// by name from a typed ModelConfig. The attention variant, its feature map and the relative
// positional encoding come from the attention registry (the `attention:` and `positional:`
// mappings), so every cell of the paper's tables is one config.
//   sequence_classifier   LRA ListOps / Text / Image and the MNIST BERT-style encoder
//   dual_encoder          LRA Retrieval: one shared encoder over both documents
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.h"
#include "core/options.h"
#include "layers/module.h"
#include "layers/registry.h"

namespace relpos {

struct ModelConfig {
  std::string type = "sequence_classifier";  // or dual_encoder
  int64_t vocab_size = 0;   // token ids in [0, vocab_size); 0: taken from the dataset
  int64_t num_classes = 0;  // 0: taken from the dataset
  int64_t max_len = 0;      // content tokens per sequence (no CLS/SEP); 0: the data's max_len
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t model_dim = 128;  // embedding width ("emb")
  int64_t qkv_dim = 0;      // width of q, k, v over all heads; 0: model_dim
  int64_t mlp_dim = 512;    // hidden width of the block MLPs and of the classifier head
  double dropout = 0.1;
  double attention_dropout = 0.1;   // passed to the variant as `dropout` unless its mapping has one
  std::string activation = "gelu";  // block MLP: gelu | relu
  std::string norm = "pre";         // pre (LRA) | post (BERT)
  bool tied_blocks = false;         // one block applied num_layers times (LRA ListOps)
  bool projection_bias = false;     // biases of q/k/v/out projections (LRA: none; BERT: yes)
  // Input: "tokens" (Embedding [vocab(+specials), model_dim]) or "pixels" (value / 255 through
  // Linear(1, model_dim); ids are pixel intensities 0-255).
  std::string input = "tokens";
  double embedding_init_std = 1.0;    // N(0, std) for the token embedding (LRA: 1, BERT: 0.02)
  std::string positions = "learned";  // absolute positions: learned | sinusoidal | none
  double position_init_std = 0.02;    // N(0, std) for learned positions (LRA, BERT: 0.02)
  // The CLS: "vector" (a learned zero-initialized vector prepended after embedding: LRA), "token"
  // (the data carries [CLS] ... [SEP] as ids vocab_size and vocab_size + 1: BERT), "none".
  std::string cls = "vector";
  std::string pooling = "cls";  // cls | mean (over real tokens)
  // Head on the pooled vector: "mlp" (Dense(mlp_dim) -> ReLU -> Dense(classes): LRA) or "tanh"
  // (BERT pooler Dense(model_dim) -> tanh -> Dense(classes)).
  std::string head = "mlp";
  // dual_encoder: how the two pooled vectors u, v meet: "concat" [u, v] or "features"
  // [u, v, u*v, u-v]; then Dense(mlp_dim) -> ReLU -> Dense(mlp_dim / 2) -> ReLU -> Dense(classes).
  std::string combine = "concat";
  Options attention{"model.attention"};    // {type: softmax} when empty
  Options positional{"model.positional"};  // none when empty
  bool share_positional = false;           // one encoding for all layers (SPE as in LRA)
  DType dtype = DType::f32;
};

// What a model reads from a batch (datasets/collate.h Batch, on the model's device).
struct ClassifierInputs {
  Tensor tokens;     // [B, L] i64 (or i32)
  Tensor key_mask;   // [B, L] u8, 1 = real token; undefined: all real
  Tensor tokens2;    // dual_encoder: the second documents [B, L2]
  Tensor key_mask2;  // [B, L2]
};

// Ids the collator must insert for this model (-1: none), and the vocabulary the data must fit.
struct SpecialTokens {
  int64_t cls_id = -1;  // prepended to every sequence
  int64_t sep_id = -1;  // appended
};

class Classifier : public Module {
 public:
  // -> logits [B, num_classes]
  virtual Var forward(const ClassifierInputs& inputs) = 0;
  // cls "token": [CLS] = vocab_size, [SEP] = vocab_size + 1; otherwise none.
  virtual SpecialTokens special_tokens() const;
  // What a user should know about this model as built, one line each (e.g. a part that cannot
  // affect the output); `relpos train` logs them as warnings.
  virtual std::vector<std::string> warnings() const { return {}; }
  const ModelConfig& config() const { return config_; }

 protected:
  explicit Classifier(ModelConfig config) : config_(std::move(config)) {}

 private:
  ModelConfig config_;
};

using ModelRegistry = Registry<Classifier, const ModelConfig&, Generator&>;
ModelRegistry& model_registry();

// Builds config.type with every parameter drawn from `gen`; checks the sizes (vocab_size,
// num_classes, max_len must be set), and refuses attention/positional options nothing read.
std::shared_ptr<Classifier> make_model(const ModelConfig& config, Generator& gen);

}  // namespace relpos

// In a model's .cpp: RELPOS_REGISTER_MODEL("name", Class); Class(const ModelConfig&, Generator&).
#define RELPOS_REGISTER_MODEL(name, Type)                                           \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_model_registered_, __LINE__) =    \
      ::relpos::model_registry().add(                                               \
          name, [](const ::relpos::ModelConfig& config, ::relpos::Generator& gen) { \
            return std::static_pointer_cast<::relpos::Classifier>(                  \
                std::make_shared<Type>(config, gen));                               \
          })
