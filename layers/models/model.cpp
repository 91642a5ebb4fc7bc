// The model registry and make_model (layers/models/model.h): the config is checked here, once,
// with "[model] ..." errors naming the field and the valid values; the models then build what it
// describes.
#include "layers/models/model.h"

#include <algorithm>
#include <vector>

namespace relpos {
namespace {

constexpr const char* kWho = "model";

void check_choice(const std::string& field, const std::string& value,
                  const std::vector<std::string>& valid) {
  RELPOS_CHECK(std::find(valid.begin(), valid.end(), value) != valid.end(), kWho,
               "unknown {} '{}'; known: {}", field, value, fmt::join(valid, ", "));
}

void check_positive(const char* field, int64_t value, const char* why) {
  RELPOS_CHECK(value > 0, kWho, "{} must be positive{}, got {}", field, why, value);
}

void check_probability(const char* field, double p) {
  RELPOS_CHECK(p >= 0 && p < 1, kWho, "{} must be in [0, 1), got {}", field, p);
}

void check_classifier(const ModelConfig& c) {
  check_positive("num_classes", c.num_classes, " (0 means: take it from the dataset first)");
  check_choice("input", c.input, {"tokens", "pixels", "patches"});
  check_choice("cls", c.cls, {"vector", "token", "none"});
  check_choice("pooling", c.pooling, {"cls", "mean"});
  check_choice("head", c.head, {"mlp", "tanh"});
  check_choice("combine", c.combine, {"concat", "features"});
  check_choice("interaction", c.interaction, {"none", "cross_attention"});
  RELPOS_CHECK(c.pooling != "cls" || c.cls != "none", kWho,
               "pooling 'cls' needs a CLS (cls: vector or token), got cls 'none'");
  RELPOS_CHECK(c.input == "tokens" || c.vocab_size == 256, kWho,
               "input '{}' takes 8-bit values (ids 0-255): vocab_size must be 256, got {}", c.input,
               c.vocab_size);
  if (c.input == "patches") {
    RELPOS_CHECK(c.patch_size >= 0 && c.patch_stride >= 0, kWho,
                 "patch_size and patch_stride must be positive (or 0: 3 and 2), got {} and {}",
                 c.patch_size, c.patch_stride);
    const PatchGeometry g = patch_geometry(c);
    RELPOS_CHECK(g.side > 0, kWho,
                 "input 'patches' reads a square image: max_len {} is not a square number of "
                 "pixels",
                 c.max_len);
    RELPOS_CHECK(g.stride > 0 && g.size >= g.stride && g.side % g.stride == 0, kWho,
                 "input 'patches' needs patch_stride > 0 dividing the image side {} and "
                 "patch_size >= patch_stride (every pixel in a patch), got patch_size {} "
                 "patch_stride {}",
                 g.side, g.size, g.stride);
    RELPOS_CHECK(c.cls != "token", kWho,
                 "input 'patches' reads whole images: [CLS] / [SEP] ids among the pixels would "
                 "be read as pixels (use cls: vector)");
  }
  if (c.type == "dual_encoder") {
    RELPOS_CHECK(c.head == "mlp", kWho,
                 "dual_encoder has its own head (Dense(mlp_dim) -> ReLU -> Dense(mlp_dim / 2) -> "
                 "ReLU -> Dense(classes)); head must be 'mlp', got '{}'",
                 c.head);
    RELPOS_CHECK(c.mlp_dim >= 2, kWho,
                 "dual_encoder needs mlp_dim >= 2 (its head has mlp_dim / 2 "
                 "units), got {}",
                 c.mlp_dim);
  }
}

void check_language_model(const ModelConfig& c) {
  RELPOS_CHECK(c.mem_len >= 0 && c.clamp_len >= 0, kWho,
               "mem_len and clamp_len must be >= 0, got {} and {}", c.mem_len, c.clamp_len);
  RELPOS_CHECK(!c.same_length || c.mem_len > 0, kWho,
               "same_length makes every query see mem_len keys: it needs mem_len > 0");
  RELPOS_CHECK(c.input == "tokens", kWho, "{} reads token ids: input must be 'tokens', got '{}'",
               c.type, c.input);
  RELPOS_CHECK(!c.tied_blocks, kWho, "{} has no tied blocks (tied_blocks: false)", c.type);
  RELPOS_CHECK(!c.recurrent_state || c.type == "causal_lm", kWho,
               "recurrent_state is a causal_lm setting (linear attention's running sums)");
}

// index_first is exact only where the first attention reads embedding + absolute position with
// nothing nonlinear in between (ModelConfig::index_first); anything else is refused, saying why.
void check_index_first(const ModelConfig& c) {
  const auto refuse_unless = [&](bool ok, const std::string& why) {
    RELPOS_CHECK(ok, kWho,
                 "index_first computes the first attention from the token ids, exact "
                 "only where it reads embedding + position directly: {}",
                 why);
  };
  const std::string attention = c.attention.get<std::string>("type", "softmax");
  refuse_unless(c.input == "tokens",
                "input '" + c.input + "' goes through a projection, not a lookup");
  refuse_unless(c.norm == "post", "norm 'pre' normalizes the block's input first (use post)");
  refuse_unless(is_language_model(c.type) || !c.embedding_norm,
                "embedding_norm: true puts a LayerNorm on the embeddings (set it false)");
  refuse_unless(attention == "softmax" && c.type != "transformer_xl",
                "it computes softmax attention, got attention '" +
                    (c.type == "transformer_xl" ? std::string("rel_xl") : attention) + "'");
  const std::string positional = c.positional.get<std::string>("type", "none");
  refuse_unless(positional == "none", "a relative encoding (positional: " + positional +
                                          ") is not part of the four-term scores");
  refuse_unless(c.attention_dropout == 0 && c.attention.get<double>("dropout", 0.0) == 0,
                "it has no dropout on the attention weights: set attention_dropout: 0");
  refuse_unless(c.mem_len == 0 && !c.recurrent_state,
                "a memory holds hidden states, not token ids: set mem_len: 0");
}

void check_config(const ModelConfig& c) {
  // 0 means "from the dataset": the caller fills these in before building.
  check_positive("vocab_size", c.vocab_size, " (0 means: take it from the dataset first)");
  check_positive("max_len", c.max_len, " (0 means: take it from the dataset first)");
  check_positive("num_layers", c.num_layers, "");
  check_positive("num_heads", c.num_heads, "");
  check_positive("model_dim", c.model_dim, "");
  check_positive("mlp_dim", c.mlp_dim, "");
  RELPOS_CHECK(c.qkv_dim >= 0, kWho, "qkv_dim must be positive or 0 (model_dim), got {}",
               c.qkv_dim);
  const int64_t qkv = c.qkv_dim > 0 ? c.qkv_dim : c.model_dim;
  RELPOS_CHECK(qkv % c.num_heads == 0, kWho, "qkv_dim {} must be a multiple of num_heads {}", qkv,
               c.num_heads);
  check_probability("dropout", c.dropout);
  check_probability("attention_dropout", c.attention_dropout);
  RELPOS_CHECK(c.embedding_init_std > 0, kWho, "embedding_init_std must be positive, got {}",
               c.embedding_init_std);
  check_choice("activation", c.activation, {"gelu", "relu"});
  check_choice("norm", c.norm, {"pre", "post"});
  RELPOS_CHECK(c.input == "patches" || (c.patch_size == 0 && c.patch_stride == 0), kWho,
               "patch_size and patch_stride are read by input 'patches' only, got input '{}'",
               c.input);
  check_choice("positions", c.positions, {"learned", "learned2d", "sinusoidal", "none"});
  if (c.positions == "learned2d") {
    RELPOS_CHECK(!is_language_model(c.type), kWho,
                 "positions 'learned2d' places the pixels of an image; {} reads a sequence (use "
                 "learned, sinusoidal or none)",
                 c.type);
    RELPOS_CHECK(c.position_grid.size() == 2 && c.position_grid[0] > 0 && c.position_grid[1] > 0 &&
                     c.position_grid[0] * c.position_grid[1] == content_tokens(c),
                 kWho,
                 "positions 'learned2d' needs position_grid: [rows, cols] with rows x cols = "
                 "{} (the tokens of the image, row-major), got [{}]",
                 content_tokens(c), fmt::join(c.position_grid, ", "));
  } else {
    RELPOS_CHECK(c.position_grid.empty(), kWho,
                 "position_grid is read by positions 'learned2d' only, got positions '{}'",
                 c.positions);
  }
  check_choice("head_combiner", c.head_combiner, {"concat", "stacked"});
  check_positive("stacked_hidden", c.stacked_hidden, "");
  RELPOS_CHECK(c.head_combiner != "stacked" || c.model_dim % (qkv / c.num_heads) == 0, kWho,
               "head_combiner 'stacked' gives head size x outputs features per token: model_dim {} "
               "must be a multiple of the head size {} (qkv_dim {} / num_heads {})",
               c.model_dim, qkv / c.num_heads, qkv, c.num_heads);
  RELPOS_CHECK(c.dtype == DType::f32 || c.dtype == DType::f64, kWho,
               "dtype must be f32 or f64, got {}", dtype_name(c.dtype));
  RELPOS_CHECK(c.interaction == "none" || c.type == "dual_encoder", kWho,
               "interaction is a dual_encoder setting (how its two documents meet), got "
               "interaction '{}' for {}",
               c.interaction, c.type);
  if (is_language_model(c.type))
    check_language_model(c);
  else
    check_classifier(c);
  if (c.index_first) check_index_first(c);
}

}  // namespace

// A function-local static: registrations from other files' static initializers may run first.
ModelRegistry& model_registry() {
  static ModelRegistry registry("model");
  return registry;
}

bool is_language_model(const std::string& type) {
  return type == "transformer_xl" || type == "causal_lm";
}

ModelConfig with_model_defaults(ModelConfig c) {
  const bool lm = is_language_model(c.type);
  if (c.activation.empty()) c.activation = lm ? "relu" : "gelu";
  if (c.norm.empty()) c.norm = lm ? "post" : "pre";
  if (c.positions.empty()) c.positions = lm ? "none" : "learned";
  return c;
}

PatchGeometry patch_geometry(const ModelConfig& c) {
  return {square_side(c.max_len), c.patch_size > 0 ? c.patch_size : 3,
          c.patch_stride > 0 ? c.patch_stride : 2};
}

int64_t content_tokens(const ModelConfig& c) {
  return c.input == "patches" ? patch_geometry(c).tokens() : c.max_len;
}

std::shared_ptr<Model> make_model(const ModelConfig& given, Generator& gen) {
  const ModelConfig config = with_model_defaults(given);
  check_config(config);
  auto model = model_registry().make(config.type, config, gen);
  // The layers refused unknown keys as they were built (make_attention / make_positional); this
  // also catches a mapping no layer read at all.
  config.attention.check_all_used();
  config.positional.check_all_used();
  return model;
}

SpecialTokens Classifier::special_tokens() const {
  if (config().cls == "token") return {config().vocab_size, config().vocab_size + 1};
  return {};
}

std::shared_ptr<Classifier> make_classifier(const ModelConfig& config, Generator& gen) {
  auto model = std::dynamic_pointer_cast<Classifier>(make_model(config, gen));
  RELPOS_CHECK(model != nullptr, kWho,
               "'{}' is a language model; this task needs a classifier (sequence_classifier, "
               "dual_encoder)",
               config.type);
  return model;
}

std::shared_ptr<LanguageModel> make_language_model(const ModelConfig& config, Generator& gen) {
  auto model = std::dynamic_pointer_cast<LanguageModel>(make_model(config, gen));
  RELPOS_CHECK(model != nullptr, kWho,
               "'{}' is a classifier; language modelling needs transformer_xl or causal_lm",
               config.type);
  return model;
}

}  // namespace relpos
