// Models (DESIGN §4, §12, §13; EXPERIMENTS.md "Model details", "Transformer-XL"): the
// classifiers and language models the experiments train. Each model type registers itself from
// its own file (RELPOS_REGISTER_MODEL) with its task, its trunk defaults and the reader of its own
// `model:` keys; what every model shares is the trunk (EncoderConfig). The attention variant, its
// feature map and the relative positional encoding come from the attention registry (the
// `attention:` and `positional:` mappings), so every cell of the papers' tables is one config.
// `relpos list` prints the registered types.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/generator.h"
#include "core/options.h"
#include "core/task_kind.h"
#include "layers/module.h"
#include "layers/registry.h"

namespace relpos {

// What every model shares, whatever its type: the trunk (widths, blocks, norm, dropout, absolute
// positions, the attention spec). train/config.cpp reads it from `model:`; check_encoder_config
// checks it; every other `model:` key belongs to the model type (ModelConfig::own). Fields
// marked "" take the type's default (ModelType::defaults).
struct EncoderConfig {
  int64_t vocab_size = 0;  // token ids in [0, vocab_size); 0: taken from the dataset
  // Classifiers: content tokens per sequence (no CLS/SEP); language models: the longest key
  // sequence, memory + segment. 0: taken from the data.
  int64_t max_len = 0;
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t model_dim = 128;  // embedding width ("emb")
  int64_t qkv_dim = 0;      // width of q, k, v over all heads; 0: model_dim
  int64_t mlp_dim = 512;    // hidden width of the block MLPs and of the classifier head
  double dropout = 0.1;
  double attention_dropout = 0.1;  // the variant's `dropout` unless its mapping has one
  std::string activation;          // block MLP: gelu | relu
  std::string norm;                // pre (LRA) | post (BERT, TXL)
  bool projection_bias = false;    // biases of q/k/v/out projections (LRA: none; BERT: yes)
  // Absolute positions: learned | learned2d | sinusoidal | none. learned2d (classifiers of
  // images): token (r, c) of the classifier's position_grid [rows, cols] gets row[r] + col[c].
  std::string positions;
  Options attention{"model.attention"};    // {type: softmax} when empty
  Options positional{"model.positional"};  // none when empty
  // How each attention combines its heads: "concat" (Concat(heads)·W^O) or "stacked" (seed 001's
  // Tanh(Tanh(Stack(heads) W^H) W^O), W^H stacked_hidden wide; model_dim / head size outputs).
  std::string head_combiner = "concat";
  int64_t stacked_hidden = 16;
  // The first block's attention computed index-first from the token ids (ISDPA, seed 001): the
  // projections of the embedding table and the positions once, QKᵀ by four gathered terms. Equal
  // to the standard first block wherever that attention reads embedding + absolute position
  // directly: post-LN, token inputs with no embedding LayerNorm, softmax attention without
  // dropout on its weights or a relative encoding, no memory. The embedding dropout then reaches
  // only the residual path (the tables cannot carry a per-token mask); with dropout 0, or in
  // evaluation, the model computes exactly what it would without index_first.
  bool index_first = false;
  DType dtype = DType::f32;
};

// A model's config: the trunk, the registered type, and the type's own keys as written (read
// and checked by the type: ModelType::read). Copies are independent values.
struct ModelConfig : EncoderConfig {
  std::string type = "sequence_classifier";  // a registered model type
  Options own{"model"};

  ModelConfig() = default;
  ModelConfig(const ModelConfig& other)
      : EncoderConfig(other), type(other.type), own(other.own.clone()) {}
  ModelConfig& operator=(const ModelConfig& other) {
    EncoderConfig::operator=(other);
    type = other.type;
    own = other.own.clone();
    return *this;
  }
};

// The relative encoding of model.positional ("none" when there is none; an explicit
// {type: none}, as a run's config.yaml writes it, is the same as none).
std::string positional_type(const EncoderConfig& config);

// The trunk's checks, naming the field and the valid values ("[model] ..."); make_model runs
// them with the sizes filled in.
void check_encoder_config(const EncoderConfig& config);
// "[model] <field> must be in [0, 1), got <p>" unless p is a dropout probability.
void check_model_probability(const std::string& field, double p);
// "[model] unknown <field> '<value>'; known: <valid>" unless value is one of `valid`.
void check_model_choice(const std::string& field, const std::string& value,
                        const std::vector<std::string>& valid);
// index_first is exact only where the first attention reads embedding + absolute position
// (EncoderConfig::index_first): refuses, saying `why`, unless `ok`.
void refuse_index_first_unless(bool ok, const std::string& why);

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
  virtual int64_t num_classes() const = 0;
  // The [CLS] / [SEP] ids the data must carry (classifier key cls: token), or none.
  virtual SpecialTokens special_tokens() const = 0;
  // What makes the model read whole examples of exactly model.max_len tokens, unpadded ("input
  // 'patches'", "positional 'fastrpb2d'": images), or "" when it reads any length up to it.
  virtual std::string whole_examples_reader() const { return ""; }

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
  // The most keys, memory and segment together, a layer can attend over: the length of its
  // position tables (model.max_len) or of its attention's positions (cosFormer); 0: any number.
  virtual int64_t max_keys() const = 0;
  // Whether forward() returns a state worth passing to the next segment (a memory or running
  // sums); a generator without one re-reads its context instead.
  virtual bool carries_state() const = 0;

 protected:
  explicit LanguageModel(ModelConfig config) : Model(std::move(config)) {}
};

// The trunk defaults of a model type (its "" fields).
struct EncoderDefaults {
  std::string activation, norm, positions;
};

// A model type: what it is for, its trunk defaults, its own `model:` keys and its builder.
struct ModelType {
  TaskKind task = TaskKind::classification;
  std::string about;  // one line for `relpos list` and errors
  EncoderDefaults defaults;
  // Reads the type's own keys from config.own with the checks that need no sizes (vocab_size,
  // max_len and num_classes may still be 0 when a config is loaded). Every key it knows is
  // read, so the caller can refuse the rest by name.
  std::function<void(const ModelConfig&)> read;
  std::function<std::shared_ptr<Model>(const ModelConfig&, Generator&)> build;
};

// The model types by name: each registers itself from its own file (RELPOS_REGISTER_MODEL).
class ModelRegistry {
 public:
  bool add(const std::string& name, ModelType type);
  bool contains(const std::string& name) const { return types_.count(name) != 0; }
  std::vector<std::string> names() const;
  // The type, or "[model] unknown model 'x'; known: ...".
  const ModelType& at(const std::string& name) const;

 private:
  std::map<std::string, ModelType> types_;
};
ModelRegistry& model_registry();

// The registered types of a task, by name.
std::vector<std::string> model_types_for(TaskKind task);
// `config` with its "" trunk fields set to the defaults of its type.
ModelConfig with_model_defaults(ModelConfig config);
// Reads the own keys of config.type (ModelType::read) and refuses any it did not read.
void check_model_keys(const ModelConfig& config);

// Builds config.type (its "" fields set to the type's defaults) with every parameter drawn from
// `gen`; checks the sizes (vocab_size, num_classes of classifiers, max_len must be set), and
// refuses own keys and attention/positional options nothing read.
std::shared_ptr<Model> make_model(const ModelConfig& config, Generator& gen);
// The same, as the kind a task needs; errors name the model type and what was expected.
std::shared_ptr<Classifier> make_classifier(const ModelConfig& config, Generator& gen);
std::shared_ptr<LanguageModel> make_language_model(const ModelConfig& config, Generator& gen);

}  // namespace relpos

// In a model's .cpp: RELPOS_REGISTER_MODEL("name", Class), where Class has
//   Class(const ModelConfig&, Generator&)   the builder
//   static ModelType type()                 its task, about line, trunk defaults and key reader
// (type().build is filled in here).
#define RELPOS_REGISTER_MODEL(name, Class)                                                    \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_model_registered_, __LINE__) = [] {         \
    ::relpos::ModelType type = Class::type();                                                 \
    type.build = [](const ::relpos::ModelConfig& config, ::relpos::Generator& gen) {          \
      return std::static_pointer_cast<::relpos::Model>(std::make_shared<Class>(config, gen)); \
    };                                                                                        \
    return ::relpos::model_registry().add(name, std::move(type));                             \
  }()
