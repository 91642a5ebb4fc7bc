// TransformerEncoder and EncoderBlock (layers/models/encoder.h). The LRA encoder follows the
// reference TransformerEncoder (embedding, CLS concatenated, positions over L + 1, dropout, pre-LN
// blocks, final LayerNorm); the BERT-style one puts its LayerNorm on the embeddings instead.
#include "layers/models/encoder.h"

#include <limits>
#include <optional>

#include "autograd/functions.h"
#include "core/cpu/available_memory.h"
#include "core/deferred_checks.h"
#include "core/shape.h"

namespace relpos {
EncoderBlock::EncoderBlock(const EncoderConfig& c, const MultiHeadAttentionConfig& attention,
                           Generator& gen)
    : pre_norm_(c.norm == "pre") {
  ln1_ = register_module("ln1", std::make_shared<LayerNorm>(c.model_dim, 1e-5, true, c.dtype));
  attn_ = register_module("attn", std::make_shared<MultiHeadAttention>(attention));
  ln2_ = register_module("ln2", std::make_shared<LayerNorm>(c.model_dim, 1e-5, true, c.dtype));
  mlp_ = register_module("mlp", std::make_shared<FeedForward>(c.model_dim, c.mlp_dim,
                                                              activation_from_name(c.activation),
                                                              c.dropout, c.dtype, gen));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(c.dropout, gen));
}

void add_encoder_blocks(ModuleList& layers, int64_t count, const EncoderConfig& config,
                        const MultiHeadAttentionConfig& attention, Generator& gen) {
  for (int64_t i = 0; i < count; ++i) {
    const auto block = std::make_shared<EncoderBlock>(config, attention, gen);
    layers.push_back(block);
    if (i > 0 || count == 1) continue;
    const int64_t bytes = block->num_parameters() * static_cast<int64_t>(dtype_size(config.dtype));
    const std::optional<int64_t> rest = checked_numel({count - 1, bytes});
    cpu::check_memory_for(
        rest.value_or(std::numeric_limits<int64_t>::max()),
        fmt::format("the parameters of {} more blocks of {} bytes", count - 1, bytes));
  }
}

Var EncoderBlock::forward(const Var& x, const Tensor& key_mask) {
  const auto scope = profile_scope();
  // x: [B, L, d]
  if (pre_norm_) {
    Var h = x + dropout_->forward(attn_->forward(ln1_->forward(x), key_mask));
    return h + dropout_->forward(mlp_->forward(ln2_->forward(h)));
  }
  return after_attention(x, attn_->forward(x, key_mask));
}

Var EncoderBlock::after_attention(const Var& x, const Var& a) {
  Var h = ln1_->forward(x + dropout_->forward(a));
  return ln2_->forward(h + dropout_->forward(mlp_->forward(h)));
}

Var EncoderBlock::forward_index_first(const Var& x, const Tensor& ids, const Var& table,
                                      const Var& positions, const Tensor& key_mask, bool causal) {
  const auto scope = profile_scope();
  RELPOS_CHECK(!pre_norm_, "model",
               "index-first attention needs a post-LN block (pre-LN normalizes its input first)");
  return after_attention(x, attn_->forward_index_first(ids, table, positions, key_mask, causal));
}

Var EncoderBlock::forward_causal(const Var& x, const Var& memory, int64_t window,
                                 AttentionCarry* carry) {
  const auto scope = profile_scope();
  // x: [B, L, d], memory: [B, M, d]
  const int64_t mem = memory.defined() ? memory.size(1) : 0, len = x.size(1);
  AttentionInputs in;
  in.causal = true;
  in.window = window;
  in.carry = carry;
  const Var keys = mem > 0 ? cat({memory, x}, 1) : x;  // [B, M + L, d]
  if (pre_norm_) {
    const Var normed = ln1_->forward(keys);
    const Var queries = mem > 0 ? slice(normed, 1, mem, mem + len) : normed;
    Var h = x + dropout_->forward(attn_->forward(queries, normed, in));
    return h + dropout_->forward(mlp_->forward(ln2_->forward(h)));
  }
  return after_attention(x, attn_->forward(x, keys, in));
}

TransformerEncoder::TransformerEncoder(const ModelConfig& c, const ClassifierConfig& k,
                                       Generator& gen)
    : config_(c), classifier_(k) {
  const int64_t front = k.cls == "none" ? 0 : 1;  // CLS vector or [CLS] token
  const int64_t back = k.cls == "token" ? 1 : 0;  // [SEP]
  seq_len_ = k.content_tokens(c.max_len) + front + back;
  // Registered, and drawn from `gen`, in this order (parameter names and initial values).
  add_input(gen);
  add_positions(front, back, gen);
  if (c.norm == "post" && k.embedding_norm)
    embedding_norm_ = register_module(
        "embedding_norm", std::make_shared<LayerNorm>(c.model_dim, 1e-5, true, c.dtype));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(c.dropout, gen));
  const MultiHeadAttentionConfig mha = block_attention(front, back, gen);
  attention_config_ = mha;
  attention_config_.gen = nullptr;  // `gen` is the caller's: set it again when building from this
  layers_ = register_module("layers", std::make_shared<ModuleList>());
  const int64_t blocks = k.tied_blocks ? 1 : c.num_layers;
  add_encoder_blocks(*layers_, blocks, c, mha, gen);
  // Refused here, before a run starts, rather than by the first forward pass.
  Attention& attention = layers_->at<EncoderBlock>(0)->attention().attention();
  RELPOS_CHECK(!attention.caps().causal_only, "model",
               "an encoder attends both ways, and attention '{}' is causal only (Transformer-XL's "
               "relative attention: model.type transformer_xl)",
               attention.name());
  // Patches mix neighbouring pixels, and a grid encoding relates them: a padded image would mix
  // padding in, and whether it ran would depend on the batch.
  const Positional* positional = layers_->at<EncoderBlock>(0)->attention().positional();
  if (patch_proj_ != nullptr)
    whole_images_reader_ = "input 'patches'";
  else if (positional != nullptr && positional->reads_whole_images())
    whole_images_reader_ = "positional '" + positional->name() + "'";
  if (c.norm == "pre")
    norm_ = register_module("norm", std::make_shared<LayerNorm>(c.model_dim, 1e-5, true, c.dtype));
}

void TransformerEncoder::add_input(Generator& gen) {
  const ModelConfig& c = config_;
  const ClassifierConfig& k = classifier_;
  const int64_t d = c.model_dim, specials = k.cls == "token" ? 2 : 0;
  if (k.cls == "vector") {
    cls_ = Var(zeros({d}, c.dtype), true);
    register_parameter("cls", cls_);
  }
  if (k.input == "tokens") {
    embedding_ = register_module(
        "embedding", std::make_shared<Embedding>(c.vocab_size + specials, d, c.dtype, gen));
    normal_(embedding_->weight().value(), 0.0, k.embedding_init_std, gen);
  } else if (k.input == "patches") {
    const PatchGeometry g = k.patch_geometry(c.max_len);
    patch_proj_ = register_module("patch_proj",
                                  std::make_shared<Linear>(g.size * g.size, d, true, c.dtype, gen));
  } else {  // pixels
    pixel_proj_ = register_module("pixel_proj", std::make_shared<Linear>(1, d, true, c.dtype, gen));
    if (specials > 0) {
      special_ = register_module("special", std::make_shared<Embedding>(specials, d, c.dtype, gen));
      normal_(special_->weight().value(), 0.0, k.embedding_init_std, gen);
    }
  }
}

void TransformerEncoder::add_positions(int64_t front, int64_t back, Generator& gen) {
  const ModelConfig& c = config_;
  const ClassifierConfig& k = classifier_;
  const int64_t d = c.model_dim;
  if (c.positions == "learned") {
    learned_positions_ = register_module(
        "position", std::make_shared<LearnedPositionalEmbedding>(seq_len_, d, c.dtype, gen));
    // N(0, 0.02) by default, as both references (LRA AddPositionEmbs, BERT initializer_range).
    normal_(learned_positions_->weight().value(), 0.0, k.position_init_std, gen);
  } else if (c.positions == "learned2d") {
    grid_positions_ = register_module(
        "position", std::make_shared<LearnedGridPositionalEmbedding>(
                        front, k.position_grid[0], k.position_grid[1], back, d, c.dtype, gen));
    for (Var* table :
         {&grid_positions_->special(), &grid_positions_->row(), &grid_positions_->col()})
      if (table->defined()) normal_(table->value(), 0.0, k.position_init_std, gen);
  } else if (c.positions == "sinusoidal") {
    sinusoidal_positions_ = register_module(
        "position", std::make_shared<SinusoidalPositionalEmbedding>(seq_len_, d, c.dtype));
  }
}

MultiHeadAttentionConfig TransformerEncoder::block_attention(int64_t front, int64_t back,
                                                             Generator& gen) const {
  const ModelConfig& c = config_;
  MultiHeadAttentionConfig mha;
  mha.model_dim = c.model_dim;
  mha.num_heads = c.num_heads;
  mha.qkv_dim = c.qkv_dim;
  mha.attention = c.attention;
  mha.dropout = c.attention_dropout;
  mha.direction = AttentionDirection::both_ways;
  mha.max_len = seq_len_;
  mha.special_front = front;
  mha.special_back = back;
  mha.bias = c.projection_bias;
  mha.head_combiner = c.head_combiner;
  mha.stacked_hidden = c.stacked_hidden;
  mha.dtype = c.dtype;
  mha.gen = &gen;
  if (classifier_.share_positional) {
    // One encoding for every layer (SPE as the LRA reference runs it).
    const int64_t qkv = c.qkv_dim > 0 ? c.qkv_dim : c.model_dim;
    AttentionOptions opt{c.positional, c.num_heads, qkv / c.num_heads,
                         c.model_dim,  seq_len_,    c.dtype,
                         &gen,         front,       back};
    opt.direction = AttentionDirection::both_ways;
    mha.shared_positional = make_positional(opt);
    mha.positional = Options(c.positional.where());
  } else {
    mha.positional = c.positional;  // copies share the read record: each layer reads it again
  }
  return mha;
}

void TransformerEncoder::check_whole_images(const Tensor& tokens, const Tensor& mask) const {
  // The pixels, and the [CLS] / [SEP] ids in the stream around them (patches refuse those).
  const SpecialTokens special = special_tokens();
  const int64_t length = config_.max_len + (special.cls_id >= 0) + (special.sep_id >= 0);
  const auto whole_images_only = [this, tokens, mask, length] {
    RELPOS_CHECK(tokens.size(1) == length &&
                     (!mask.defined() ||
                      sum(cast(mask, DType::f32)).item() == static_cast<double>(mask.numel())),
                 "model",
                 "{} reads whole images of {} pixels; got a batch of {} with padding or another "
                 "length",
                 whole_images_reader_, config_.max_len, tokens.str());
  };
  if (!mask.defined() || tokens.size(1) != length || !device_checks_deferred()) {
    whole_images_only();
  } else {  // a training step: the padded positions counted on the device, read later
    const Tensor padded = sum(cast(eq(mask, zeros_like(mask)), DType::f64));
    defer_device_check(padded.reshape({1}), whole_images_only);
  }
}

Var TransformerEncoder::embed(const Tensor& tokens) const {
  if (embedding_ != nullptr) return embedding_->forward(tokens);  // [B, L, d]
  if (patch_proj_ != nullptr) {
    const Tensor values = mul_scalar(cast(tokens, config_.dtype), 1.0 / 255.0);  // [B, L]
    return patch_proj_->forward(
        Var(image_patches(values, classifier_.patch_geometry(config_.max_len))));
  }
  // Pixels: value / 255 through Linear(1, d); ids >= vocab_size are CLS / SEP rows of `special`.
  const Tensor limit =
      Tensor::scalar(static_cast<double>(config_.vocab_size), tokens.dtype(), tokens.device());
  const Tensor is_special = ge(tokens, limit);  // [B, L] u8
  Tensor values = mul_scalar(cast(tokens, config_.dtype), 1.0 / 255.0);
  if (special_ != nullptr) values = masked_fill(values, is_special, 0.0);
  Var x = pixel_proj_->forward(Var(values.unsqueeze(2)));  // [B, L, 1] -> [B, L, d]
  if (special_ == nullptr) return x;
  // [B, L]: 0 for [CLS], 1 for [SEP], 0 where the token is a pixel (that row is not used)
  const Tensor index = where(is_special, sub(tokens, limit), zeros_like(tokens));
  return where(is_special.unsqueeze(2), special_->forward(index), x);
}

EncoderOutput TransformerEncoder::forward(const Tensor& tokens, const Tensor& key_mask) {
  const auto scope = profile_scope();
  RELPOS_CHECK(tokens.dim() == 2, "model", "tokens must be [batch, length], got {}", tokens.str());
  RELPOS_CHECK(!key_mask.defined() || key_mask.shape() == tokens.shape(), "model",
               "key_mask must have the shape of tokens {}, got {}", tokens.str(), key_mask.str());
  const int64_t batch = tokens.size(0);
  Tensor mask = key_mask;
  if (!whole_images_reader_.empty()) check_whole_images(tokens, mask);
  if (patch_proj_ != nullptr) mask = Tensor();  // whole images: the patches need no mask
  Var x = embed(tokens);                        // [B, T, d]
  if (cls_.defined()) {
    // [B, 1 + L, d]; the CLS is a real key.
    Var cls = expand(reshape(cls_, {1, 1, config_.model_dim}), {batch, 1, config_.model_dim});
    x = cat({cls, x}, 1);
    if (mask.defined()) mask = cat({ones({batch, 1}, DType::u8, mask.device()), mask}, 1);
  }
  RELPOS_CHECK(x.size(1) <= seq_len_, "model",
               "a sequence of {} tokens exceeds the {} the model is built for (max_len {} plus "
               "special tokens)",
               x.size(1), seq_len_, config_.max_len);
  if (learned_positions_ != nullptr) x = learned_positions_->forward(x);
  if (grid_positions_ != nullptr) x = grid_positions_->forward(x);
  if (sinusoidal_positions_ != nullptr) x = sinusoidal_positions_->forward(x);
  if (embedding_norm_ != nullptr) x = embedding_norm_->forward(x);
  x = dropout_->forward(x);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    auto block = layers_->at<EncoderBlock>(classifier_.tied_blocks ? 0 : i);
    if (i == 0 && config_.index_first) {
      const IndexFirstInputs in = index_first_inputs(tokens);
      x = block->forward_index_first(x, in.ids, in.table, in.positions, mask, false);
    } else {
      x = block->forward(x, mask);
    }
  }
  if (norm_ != nullptr) x = norm_->forward(x);
  return {x, mask};
}

TransformerEncoder::IndexFirstInputs TransformerEncoder::index_first_inputs(
    const Tensor& tokens) const {
  // The token embedding is the table; a CLS vector is one more row, looked up at position 0.
  IndexFirstInputs in{cast(tokens, DType::i64), embedding_->weight(), Var()};
  if (cls_.defined()) {
    const int64_t cls_id = in.table.size(0);
    in.table = cat({in.table, reshape(cls_, {1, config_.model_dim})}, 0);
    in.ids =
        cat({full({tokens.size(0), 1}, static_cast<double>(cls_id), DType::i64, tokens.device()),
             in.ids},
            1);
  }
  if (learned_positions_ != nullptr) in.positions = learned_positions_->weight();
  if (grid_positions_ != nullptr) in.positions = grid_positions_->table();
  if (sinusoidal_positions_ != nullptr) in.positions = Var(sinusoidal_positions_->table());
  return in;
}

Var TransformerEncoder::pool(const EncoderOutput& out) const {
  const Var& h = out.hidden;  // [B, L, d]
  if (classifier_.pooling == "cls") return select(h, 1, 0);
  if (!out.key_mask.defined()) return mean(h, {1});
  const Tensor m = cast(out.key_mask, h.dtype()).unsqueeze(2);  // [B, L, 1]
  return sum(h * Var(m), {1}) / Var(sum(m, {1}));               // [B, d] / [B, 1]
}

std::vector<std::string> TransformerEncoder::warnings(const std::string& name) const {
  // Tied blocks and a shared encoding use the last block's weights in earlier blocks too.
  if (classifier_.pooling != "cls" || classifier_.tied_blocks || classifier_.share_positional)
    return {};
  const int64_t last = config_.num_layers - 1;
  Positional* positional = layers_->at<EncoderBlock>(last)->attention().positional();
  if (positional == nullptr || positional->reaches_leading_special_rows()) return {};
  const std::string where = fmt::format("{}.layers.{}.attn.positional", name, last);
  const std::string consequence =
      last == 0 ? "the model is the same function as without it; use num_layers >= 2, pooling: "
                  "mean, or the encoding's special_tokens_front: 0"
                : "its weights get no gradient and stay at their init; the earlier blocks' "
                  "encodings do learn";
  return {fmt::format(
      "[model] {} ({}) cannot reach the output: its term is zero on the CLS row the model pools "
      "(special tokens are left out, as in the FastRPB reference) and no later block carries it "
      "there, so {}",
      where, positional->name(), consequence)};
}

MlpHead::MlpHead(const std::vector<int64_t>& widths, DType dtype, Generator& gen) {
  for (size_t i = 0; i + 1 < widths.size(); ++i)
    fcs_.push_back(
        register_module("fc" + std::to_string(i + 1),
                        std::make_shared<Linear>(widths[i], widths[i + 1], true, dtype, gen)));
}

Var MlpHead::forward(const Var& x) const {
  const auto scope = profile_scope();
  Var h = x;
  for (size_t i = 0; i < fcs_.size(); ++i) {
    h = fcs_[i]->forward(h);
    if (i + 1 < fcs_.size()) h = relu(h);
  }
  return h;
}

}  // namespace relpos
