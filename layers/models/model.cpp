// The model registry, the trunk's checks and make_model (layers/models/model.h). A model type
// checks its own keys (ModelType::read and its constructor); what every model shares is checked
// here, once, with "[model] ..." errors naming the field and the valid values.
#include "layers/models/model.h"

#include <algorithm>
#include <new>
#include <vector>

namespace relpos {
namespace {

constexpr const char* kWho = "model";

void check_positive(const char* field, int64_t value, const char* why) {
  RELPOS_CHECK(value > 0, kWho, "{} must be positive{}, got {}", field, why, value);
  check_largest_size(kWho, field, value);  // as Options::get_size bounds the layers' sizes
}

// The trunk's part of index_first's exactness (the types add theirs: inputs, memory).
void check_index_first(const EncoderConfig& c) {
  refuse_index_first_unless(c.norm == "post",
                            "norm 'pre' normalizes the block's input first (use post)");
  const std::string attention = c.attention.get<std::string>("type", "softmax");
  refuse_index_first_unless(attention == "softmax",
                            "it computes softmax attention, got attention '" + attention + "'");
  const std::string positional = positional_type(c);
  refuse_index_first_unless(positional == "none", "a relative encoding (positional: " + positional +
                                                      ") is not part of the four-term scores");
  refuse_index_first_unless(
      c.attention_dropout == 0 && c.attention.get<double>("dropout", 0.0) == 0,
      "it has no dropout on the attention weights: set attention_dropout: 0");
}

}  // namespace

void check_model_probability(const std::string& field, double p) {
  RELPOS_CHECK(p >= 0 && p < 1, kWho, "{} must be in [0, 1), got {}", field, p);
}

void check_model_choice(const std::string& field, const std::string& value,
                        const std::vector<std::string>& valid) {
  RELPOS_CHECK(std::find(valid.begin(), valid.end(), value) != valid.end(), kWho,
               "unknown {} '{}'; known: {}", field, value, fmt::join(valid, ", "));
}

void refuse_index_first_unless(bool ok, const std::string& why) {
  RELPOS_CHECK(ok, kWho,
               "index_first computes the first attention from the token ids, exact only where it "
               "reads embedding + position directly: {}",
               why);
}

std::string positional_type(const EncoderConfig& config) {
  return config.positional.get<std::string>("type", "none");
}

void check_encoder_config(const EncoderConfig& c) {
  // 0 means "from the dataset": the caller fills these in before building.
  check_positive("vocab_size", c.vocab_size, " (0 means: take it from the dataset first)");
  check_positive("max_len", c.max_len, " (0 means: take it from the dataset first)");
  check_positive("num_layers", c.num_layers, "");
  check_positive("num_heads", c.num_heads, "");
  check_positive("model_dim", c.model_dim, "");
  check_positive("mlp_dim", c.mlp_dim, "");
  RELPOS_CHECK(c.qkv_dim >= 0, kWho, "qkv_dim must be positive or 0 (model_dim), got {}",
               c.qkv_dim);
  check_largest_size(kWho, "qkv_dim", c.qkv_dim);
  const int64_t qkv = c.qkv_dim > 0 ? c.qkv_dim : c.model_dim;
  RELPOS_CHECK(qkv % c.num_heads == 0, kWho, "qkv_dim {} must be a multiple of num_heads {}", qkv,
               c.num_heads);
  check_model_probability("dropout", c.dropout);
  check_model_probability("attention_dropout", c.attention_dropout);
  check_model_choice("activation", c.activation, {"gelu", "relu"});
  check_model_choice("norm", c.norm, {"pre", "post"});
  check_model_choice("positions", c.positions, {"learned", "learned2d", "sinusoidal", "none"});
  check_model_choice("head_combiner", c.head_combiner, {"concat", "stacked"});
  check_positive("stacked_hidden", c.stacked_hidden, "");
  RELPOS_CHECK(c.head_combiner == "stacked" || c.stacked_hidden == EncoderConfig{}.stacked_hidden,
               kWho,
               "stacked_hidden is the width of head_combiner 'stacked'; head_combiner '{}' has no "
               "use for it (got {})",
               c.head_combiner, c.stacked_hidden);
  RELPOS_CHECK(c.head_combiner != "stacked" || c.model_dim % (qkv / c.num_heads) == 0, kWho,
               "head_combiner 'stacked' gives head size x outputs features per token: model_dim {} "
               "must be a multiple of the head size {} (qkv_dim {} / num_heads {})",
               c.model_dim, qkv / c.num_heads, qkv, c.num_heads);
  RELPOS_CHECK(c.dtype == DType::f32 || c.dtype == DType::f64, kWho,
               "dtype must be f32 or f64, got {}", dtype_name(c.dtype));
  if (c.index_first) check_index_first(c);
}

bool ModelRegistry::add(const std::string& name, ModelType type) {
  RELPOS_CHECK(!types_.count(name), kWho, "'{}' is registered twice", name);
  types_.emplace(name, std::move(type));
  return true;
}

std::vector<std::string> ModelRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& entry : types_) out.push_back(entry.first);
  return out;
}

const ModelType& ModelRegistry::at(const std::string& name) const {
  const auto it = types_.find(name);
  RELPOS_CHECK(it != types_.end(), kWho, "unknown model '{}'; known: {}", name,
               fmt::join(names(), ", "));
  return it->second;
}

// A function-local static: registrations from other files' static initializers may run first.
ModelRegistry& model_registry() {
  static ModelRegistry registry;
  return registry;
}

ModelConfig with_model_defaults(ModelConfig c) {
  const EncoderDefaults& d = model_registry().at(c.type).defaults;
  if (c.activation.empty()) c.activation = d.activation;
  if (c.norm.empty()) c.norm = d.norm;
  if (c.positions.empty()) c.positions = d.positions;
  return c;
}

void check_model_keys(const ModelConfig& config) {
  ModelConfig resolved = with_model_defaults(config);
  resolved.own = config.own;  // shares the caller's read record (a copy would not)
  model_registry().at(config.type).read(resolved);
}

namespace {
// The trunk's sizes, for a model that does not fit: "num_layers 2, num_heads 4, model_dim 64, ...".
std::string trunk_sizes(const ModelConfig& c) {
  return fmt::format(
      "num_layers {}, num_heads {}, model_dim {}, mlp_dim {}, qkv_dim {}, max_len {}, vocab_size "
      "{}",
      c.num_layers, c.num_heads, c.model_dim, c.mlp_dim, c.qkv_dim > 0 ? c.qkv_dim : c.model_dim,
      c.max_len, c.vocab_size);
}
}  // namespace

std::shared_ptr<Model> make_model(const ModelConfig& given, Generator& gen) {
  const ModelType& type = model_registry().at(given.type);
  const ModelConfig config = with_model_defaults(given);
  check_encoder_config(config);
  type.read(config);
  std::shared_ptr<Model> model;
  try {
    model = type.build(config, gen);
  } catch (const OutOfMemory& e) {  // the allocator knows the bytes, not which sizes asked
    fail<OutOfMemory>(kWho, "{} with {} does not fit in memory: {}", config.type,
                      trunk_sizes(config), e.what());
  } catch (const std::bad_alloc&) {
    fail<OutOfMemory>(kWho, "{} with {} does not fit in memory (std::bad_alloc)", config.type,
                      trunk_sizes(config));
  }
  // The type read its keys and the layers refused unknown options as they were built
  // (make_attention / make_positional); this also catches a mapping no layer read at all.
  config.own.check_all_used();
  config.attention.check_all_used();
  config.positional.check_all_used();
  return model;
}

std::shared_ptr<Classifier> make_classifier(const ModelConfig& config, Generator& gen) {
  auto model = std::dynamic_pointer_cast<Classifier>(make_model(config, gen));
  RELPOS_CHECK(model != nullptr, kWho,
               "'{}' is a language model; this task needs a classifier ({})", config.type,
               fmt::join(model_types_for(TaskKind::classification), ", "));
  return model;
}

std::shared_ptr<LanguageModel> make_language_model(const ModelConfig& config, Generator& gen) {
  auto model = std::dynamic_pointer_cast<LanguageModel>(make_model(config, gen));
  RELPOS_CHECK(model != nullptr, kWho, "'{}' is a classifier; language modelling needs {}",
               config.type, fmt::join(model_types_for(TaskKind::language_modelling), " or "));
  return model;
}

std::vector<std::string> model_types_for(TaskKind task) {
  std::vector<std::string> out;
  for (const std::string& name : model_registry().names())
    if (model_registry().at(name).task == task) out.push_back(name);
  return out;
}

}  // namespace relpos
