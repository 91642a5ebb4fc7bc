// Models (DESIGN §4, §12; EXPERIMENTS.md "Model details", "Transformer-XL"): the classifiers and
// language models the experiments train, built by name from a typed ModelConfig. The attention
// variant, its feature map and the relative positional encoding come from the attention registry
// (the `attention:` and `positional:` mappings), so every cell of the papers' tables is one config.
//   sequence_classifier   LRA ListOps / Text / Image and the MNIST BERT-style encoder
//   dual_encoder          LRA Retrieval: one shared encoder over both documents
//   transformer_xl        character LM: rel_xl blocks with segment memory (Dai et al. 2019)
//   causal_lm             the same LM shell with any attention of the registry, built causally
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.h"
#include "core/options.h"
#include "layers/image_patches.h"
#include "layers/module.h"
#include "layers/registry.h"

namespace relpos {

// Fields marked "" take the model's default (with_model_defaults below).
struct ModelConfig {
  std::string type = "sequence_classifier";  // a registered model name (list above)
  int64_t vocab_size = 0;   // token ids in [0, vocab_size); 0: taken from the dataset
  int64_t num_classes = 0;  // classifiers; 0: taken from the dataset
  // Classifiers: content tokens per sequence (no CLS/SEP); language models: the longest key
  // sequence, memory + segment. 0: taken from the data.
  int64_t max_len = 0;
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t model_dim = 128;  // embedding width ("emb")
  int64_t qkv_dim = 0;      // width of q, k, v over all heads; 0: model_dim
  int64_t mlp_dim = 512;    // hidden width of the block MLPs and of the classifier head
  double dropout = 0.1;
  double attention_dropout = 0.1;  // passed to the variant as `dropout` unless its mapping has one
  std::string activation;    // block MLP: gelu | relu; "": gelu (classifiers), relu (LMs, as TXL)
  std::string norm;          // pre (LRA) | post (BERT, TXL); "": pre (classifiers), post (LMs)
  bool tied_blocks = false;  // one block applied num_layers times (LRA ListOps)
  bool projection_bias = false;  // biases of q/k/v/out projections (LRA: none; BERT: yes)
  // Input: "tokens" (Embedding [vocab(+specials), model_dim]), "pixels" (value / 255 through
  // Linear(1, model_dim); ids are pixel intensities 0-255) or "patches" (the ids are a square
  // image of max_len pixels; each token is a patch_size x patch_size patch of value / 255, one
  // every patch_stride pixels, through Linear(patch_size^2, model_dim): layers/image_patches.h).
  std::string input = "tokens";
  int64_t patch_size = 0;           // input "patches"; 0: 3
  int64_t patch_stride = 0;         // input "patches"; 0: 2
  double embedding_init_std = 1.0;  // N(0, std) for the token embedding (LRA: 1, BERT: 0.02)
  // Absolute positions: learned | learned2d | sinusoidal | none; "": learned (classifiers), none
  // (LMs). learned2d (classifiers of images): token (r, c) of the position_grid [rows, cols]
  // (rows x cols = the tokens of an image, row-major) gets row[r] + col[c], each CLS / SEP its
  // own vector.
  std::string positions;
  std::vector<int64_t> position_grid;
  double position_init_std = 0.02;  // N(0, std) for learned positions, each table (LRA, BERT: 0.02)
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
  // dual_encoder: "none", or "cross_attention": before pooling, each document attends to the
  // other once (one layer shared by both directions, the model's attention and positional
  // encoding, which then sees Lq != Lk: seed 004's cross attention for skew).
  std::string interaction = "none";
  Options attention{"model.attention"};    // {type: softmax} when empty
  Options positional{"model.positional"};  // none when empty
  bool share_positional = false;           // one encoding for all layers (SPE as in LRA)
  // How each attention combines its heads: "concat" (Concat(heads)·W^O) or "stacked" (seed 001's
  // Tanh(Tanh(Stack(heads) W^H) W^O), W^H stacked_hidden wide; model_dim / head size outputs).
  std::string head_combiner = "concat";
  int64_t stacked_hidden = 16;
  // Post-LN classifiers: a LayerNorm on the embeddings before the first block (BERT); false: none
  // (Vaswani et al.), which index_first needs.
  bool embedding_norm = true;
  // The first block's attention computed index-first from the token ids (ISDPA, seed 001): the
  // projections of the embedding table and the positions once, QKᵀ by four gathered terms. Equal
  // to the standard first block wherever that attention reads embedding + absolute position
  // directly: post-LN, no embedding LayerNorm, token inputs, softmax attention without dropout on
  // its weights or a relative encoding, no memory. The embedding dropout then reaches only the
  // residual path (the tables cannot carry a per-token mask); with dropout 0, or in evaluation,
  // the model computes exactly what it would without index_first.
  bool index_first = false;
  // Language models:
  int64_t mem_len = 0;       // hidden states kept from earlier segments as memory (0: none)
  int64_t clamp_len = 0;     // transformer_xl: distances above it use its embedding (0: none)
  bool same_length = false;  // transformer_xl: every query sees exactly mem_len keys
  bool untie_r = false;      // transformer_xl: one u, v pair per layer (default: shared)
  bool tie_weights = true;   // the output layer is the embedding matrix (plus a bias)
  // causal_lm with linear attention: carry its running sums Σ phi(k) v^T, Σ phi(k) from segment
  // to segment instead of hidden states: the whole past, exactly, in memory fixed in length.
  bool recurrent_state = false;
  DType dtype = DType::f32;
};

// Whether `type` names a language model (transformer_xl, causal_lm).
bool is_language_model(const std::string& type);
// `config` with its "" fields set to the defaults of its type.
ModelConfig with_model_defaults(ModelConfig config);
// input "patches": the image (side sqrt(max_len)) and its patches.
PatchGeometry patch_geometry(const ModelConfig& config);
// The tokens the encoder makes of an input of max_len ids: max_len, or the patches of the image.
int64_t content_tokens(const ModelConfig& config);

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

// What every model shares: its (defaults-resolved) config and the notes a user should read.
class Model : public Module {
 public:
  const ModelConfig& config() const { return config_; }
  // What a user should know about this model as built, one line each (e.g. a part that cannot
  // affect the output); `relpos train` logs them as warnings.
  virtual std::vector<std::string> warnings() const { return {}; }

 protected:
  explicit Model(ModelConfig config) : config_(std::move(config)) {}

 private:
  ModelConfig config_;
};

class Classifier : public Model {
 public:
  // -> logits [B, num_classes]
  virtual Var forward(const ClassifierInputs& inputs) = 0;
  // cls "token": [CLS] = vocab_size, [SEP] = vocab_size + 1; otherwise none.
  virtual SpecialTokens special_tokens() const;

 protected:
  explicit Classifier(ModelConfig config) : Model(std::move(config)) {}
};

// What a language model carries from one segment of a stream to the next: named tensors, each
// with the batch first, detached (no gradient crosses segments). Empty at a stream's start.
// Hidden-state memory: "layers.<i>.memory" [B, M, model_dim], the input of layer i at the last
// M <= mem_len positions.
using LmState = std::map<std::string, Tensor>;

struct LmOutput {
  Var logits;     // [B, L, vocab_size]
  LmState state;  // for the next segment of the same rows
};

// How far a language model looks back. Evaluation may widen it: Transformer-XL evaluates with a
// longer memory than it trains with.
struct LmContext {
  int64_t mem_len = 0;
  int64_t clamp_len = 0;
  bool same_length = false;
};

class LanguageModel : public Model {
 public:
  // tokens [B, L] i64 (ids in [0, vocab_size)), the state the previous segment of the same rows
  // returned (empty: none) -> logits for every position and the next state.
  virtual LmOutput forward(const Tensor& tokens, const LmState& state) = 0;
  virtual LmContext context() const = 0;
  // Refuses, saying why, what the model cannot do (e.g. a memory longer than a learned table).
  virtual void set_context(const LmContext& context) = 0;
  // Whether forward() returns a state worth passing to the next segment (a memory or running
  // sums); a generator without one re-reads its context instead.
  virtual bool carries_state() const = 0;

 protected:
  explicit LanguageModel(ModelConfig config) : Model(std::move(config)) {}
};

using ModelRegistry = Registry<Model, const ModelConfig&, Generator&>;
ModelRegistry& model_registry();

// Builds config.type (its "" fields set to the type's defaults) with every parameter drawn from
// `gen`; checks the sizes (vocab_size, num_classes of classifiers, max_len must be set), and
// refuses attention/positional options nothing read.
std::shared_ptr<Model> make_model(const ModelConfig& config, Generator& gen);
// The same, as the kind a task needs; errors name the model type and what was expected.
std::shared_ptr<Classifier> make_classifier(const ModelConfig& config, Generator& gen);
std::shared_ptr<LanguageModel> make_language_model(const ModelConfig& config, Generator& gen);

}  // namespace relpos

// In a model's .cpp: RELPOS_REGISTER_MODEL("name", Class); Class(const ModelConfig&, Generator&).
#define RELPOS_REGISTER_MODEL(name, Type)                                                          \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_model_registered_, __LINE__) =                   \
      ::relpos::model_registry().add(                                                              \
          name, [](const ::relpos::ModelConfig& config, ::relpos::Generator& gen) {                \
            return std::static_pointer_cast<::relpos::Model>(std::make_shared<Type>(config, gen)); \
          })
