// LmTransformer (layers/models/lm_transformer.h).
#include "layers/models/lm_transformer.h"

#include <algorithm>
#include <cmath>

#include "autograd/functions.h"
#include "layers/init.h"

namespace relpos {
namespace {

constexpr const char* kWho = "model";
constexpr double kInitStd = 0.02;  // Transformer-XL's init_std

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string lm_memory_name(int64_t layer) {
  return "layers." + std::to_string(layer) + ".memory";
}

LmOutputLayer::LmOutputLayer(int64_t vocab, int64_t dim, bool tied, DType dtype) {
  if (!tied) {
    weight_ = Var(Tensor::empty({vocab, dim}, dtype), true);
    register_parameter("weight", weight_);
  }
  bias_ = Var(zeros({vocab}, dtype), true);
  register_parameter("bias", bias_);
}

Var LmOutputLayer::forward(const Var& h, const Var& embedding) const {
  const auto scope = profile_scope();
  const Var& w = weight_.defined() ? weight_ : embedding;  // [V, d]
  return matmul(h, w, false, true) + bias_;                // [B, L, V]
}

LmConfig LmConfig::read(const ModelConfig& config) {
  LmConfig c;
  c.mem_len = config.own.get_size("mem_len", c.mem_len, 0);
  c.tie_weights = config.own.get<bool>("tie_weights", c.tie_weights);
  RELPOS_CHECK(config.positions != "learned2d", kWho,
               "positions 'learned2d' places the pixels of an image; {} reads a sequence (use "
               "learned, sinusoidal or none)",
               config.type);
  if (config.index_first)
    refuse_index_first_unless(c.mem_len == 0,
                              "a memory holds hidden states, not token ids: set mem_len: 0");
  return c;
}

LmShell causal_shell(const ModelConfig& c) {
  LmShell shell;
  shell.attention = c.attention;
  shell.final_norm = c.norm == "pre";
  return shell;
}

LmTransformer::LmTransformer(const ModelConfig& c, Generator& gen, const LmShell& shell)
    : LanguageModel(c),
      context_(shell.context),
      embedding_scale_(shell.embedding_scale),
      recurrent_state_(shell.recurrent_state),
      clamps_(shell.clamps) {
  const int64_t d = c.model_dim;
  embedding_ =
      register_module("embedding", std::make_shared<Embedding>(c.vocab_size, d, c.dtype, gen));
  if (c.positions == "learned")
    learned_positions_ = register_module(
        "position", std::make_shared<LearnedPositionalEmbedding>(c.max_len, d, c.dtype, gen));
  if (c.positions == "sinusoidal")
    sinusoidal_positions_ = register_module(
        "position", std::make_shared<SinusoidalPositionalEmbedding>(c.max_len, d, c.dtype));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(c.dropout, gen));

  MultiHeadAttentionConfig mha;
  mha.model_dim = d;
  mha.num_heads = c.num_heads;
  mha.qkv_dim = c.qkv_dim;
  mha.attention = shell.attention;
  mha.dropout = c.attention_dropout;
  mha.direction = AttentionDirection::causal;
  mha.positional = c.positional;  // copies share the read record: each layer reads it again
  mha.max_len = c.max_len;
  mha.bias = c.projection_bias;
  mha.head_combiner = c.head_combiner;
  mha.stacked_hidden = c.stacked_hidden;
  mha.dtype = c.dtype;
  mha.gen = &gen;
  layers_ = register_module("layers", std::make_shared<ModuleList>());
  add_encoder_blocks(*layers_, c.num_layers, c, mha, gen);
  if (shell.final_norm)
    norm_ = register_module("norm", std::make_shared<LayerNorm>(d, 1e-5, true, c.dtype));
  output_ = register_module(
      "output", std::make_shared<LmOutputLayer>(c.vocab_size, d, shell.tie_weights, c.dtype));

  // Transformer-XL's weights_init: weights N(0, 0.02), LayerNorm gains N(1, 0.02), biases 0.
  // Positional encodings and the attention's own parameters keep their documented inits.
  for (auto& [name, p] : named_parameters()) {
    if (name.find(".positional.") != std::string::npos ||
        name.find(".attention.") != std::string::npos)
      continue;
    const bool norm = name.find("ln1.") != std::string::npos ||
                      name.find("ln2.") != std::string::npos || name.rfind("norm.", 0) == 0;
    if (ends_with(name, "bias"))
      constant_(p.value(), 0.0);
    else if (norm)
      normal_(p.value(), 1.0, kInitStd, gen);
    else
      normal_(p.value(), 0.0, kInitStd, gen);
  }

  // The shortest limit of the position tables, the encodings and the attention (cosFormer).
  const auto limit_to = [&](int64_t keys) {
    if (keys > 0) max_keys_ = max_keys_ == 0 ? keys : std::min(max_keys_, keys);
  };
  for (size_t i = 0; i < layers_->size(); ++i) {
    MultiHeadAttention& mha = layers_->at<EncoderBlock>(i)->attention();
    if (mha.positional() != nullptr) limit_to(mha.positional()->max_keys());
    limit_to(mha.attention().caps().max_keys);
  }
  if (learned_positions_ != nullptr || sinusoidal_positions_ != nullptr) limit_to(c.max_len);
}

void LmTransformer::check_context(const LmContext& context) const {
  RELPOS_CHECK(context.mem_len >= 0 && context.clamp_len >= 0, kWho,
               "{}: mem_len and clamp_len must be >= 0, got {} and {}", config().type,
               context.mem_len, context.clamp_len);
  RELPOS_CHECK(!context.same_length || context.mem_len > 0, kWho,
               "{}: same_length makes every query see mem_len keys: it needs mem_len > 0",
               config().type);
  RELPOS_CHECK(context.mem_len == 0 || config().positions == "none", kWho,
               "{}: positions '{}' are absolute and cannot be continued across segments (the "
               "memory was embedded at positions of its own segment); use positions: none with a "
               "relative encoding (positional: shaw, skew, fastrpb, ...) or mem_len: 0",
               config().type, config().positions);
  if (context.mem_len > 0)
    for (size_t i = 0; i < layers_->size(); ++i) {
      const Positional* positional = layers_->at<EncoderBlock>(i)->attention().positional();
      const std::string why = positional != nullptr ? positional->why_no_memory() : "";
      RELPOS_CHECK(why.empty(), kWho,
                   "{}: positional '{}' cannot follow a memory: {}; set mem_len: 0", config().type,
                   positional->name(), why);
    }
  RELPOS_CHECK(clamps_ || (context.clamp_len == 0 && !context.same_length), kWho,
               "clamp_len and same_length are transformer_xl settings; {} has neither (got "
               "clamp_len {}, same_length {})",
               config().type, context.clamp_len, context.same_length);
}

void LmTransformer::set_context(const LmContext& context) {
  check_context(context);
  apply_context(context);
  context_ = context;
}

LmOutput LmTransformer::forward(const Tensor& tokens, const LmState& state) {
  const auto scope = profile_scope();
  RELPOS_CHECK(tokens.dim() == 2, kWho, "{}: tokens must be [batch, length], got {}", config().type,
               tokens.str());
  const int64_t batch = tokens.size(0), len = tokens.size(1), d = config().model_dim;
  RELPOS_CHECK(max_keys_ == 0 || len <= max_keys_, kWho,
               "{}: a segment of {} exceeds the {} keys its position tables cover "
               "(model.max_len); train with a larger max_len or use a shorter tgt_len",
               config().type, len, max_keys_);
  Var x = embedding_->forward(tokens);  // [B, L, d]
  if (embedding_scale_ != 1.0) x = x * embedding_scale_;
  if (learned_positions_ != nullptr) x = learned_positions_->forward(x);
  if (sinusoidal_positions_ != nullptr) x = sinusoidal_positions_->forward(x);
  x = dropout_->forward(x);
  LmOutput out;
  for (int64_t i = 0; i < static_cast<int64_t>(layers_->size()); ++i) {
    Tensor memory;  // [B, M, d]
    const auto it = state.find(lm_memory_name(i));
    if (it != state.end() && context_.mem_len > 0) {
      memory = it->second;
      RELPOS_CHECK(memory.dim() == 3 && memory.size(0) == batch && memory.size(2) == d, kWho,
                   "{}: the memory of layer {} must be [{}, M, {}], got {}", config().type, i,
                   batch, d, memory.str());
      const int64_t kept = std::min(memory.size(1), context_.mem_len);  // a shortened context
      memory = memory.slice(1, memory.size(1) - kept, memory.size(1));
    }
    const int64_t mem = memory.defined() ? memory.size(1) : 0;
    RELPOS_CHECK(max_keys_ == 0 || mem + len <= max_keys_, kWho,
                 "{}: memory {} + segment {} = {} keys exceed the {} its position tables cover "
                 "(model.max_len); train with a larger max_len or use a shorter mem_len or "
                 "tgt_len",
                 config().type, mem, len, mem + len, max_keys_);
    if (context_.mem_len > 0) {
      // The input of layer i at the last mem_len positions, detached, for the next segment.
      const Tensor all = mem > 0 ? cat({memory, x.value()}, 1) : x.value();  // [B, M + L, d]
      const int64_t keep = std::min(all.size(1), context_.mem_len);
      out.state[lm_memory_name(i)] = all.slice(1, all.size(1) - keep, all.size(1)).contiguous();
    }
    const int64_t window = context_.same_length ? context_.mem_len : 0;
    AttentionCarry
        carry;  // recurrent_state: the attention's running sums, "layers.<i>.attention.*"
    const std::string prefix = "layers." + std::to_string(i) + ".attention.";
    if (recurrent_state_)
      for (const auto& [name, t] : state)
        if (name.rfind(prefix, 0) == 0) carry.in[name.substr(prefix.size())] = t;
    auto block = layers_->at<EncoderBlock>(i);
    if (i == 0 && config().index_first) {
      // The embedding table (scaled) and the positions: what the first attention reads.
      Var table = embedding_->weight();
      if (embedding_scale_ != 1.0) table = table * embedding_scale_;
      Var positions;
      if (learned_positions_ != nullptr) positions = learned_positions_->weight();
      if (sinusoidal_positions_ != nullptr) positions = Var(sinusoidal_positions_->table());
      x = block->forward_index_first(x, tokens, table, positions, Tensor(), true);
    } else {
      x = block->forward_causal(x, mem > 0 ? Var(memory) : Var(), window,
                                recurrent_state_ ? &carry : nullptr);
    }
    for (const auto& [name, t] : carry.out) out.state[prefix + name] = t;
  }
  if (norm_ != nullptr) x = norm_->forward(x);
  x = dropout_->forward(x);
  out.logits = output_->forward(x, embedding_->weight());  // [B, L, V]
  return out;
}

}  // namespace relpos
