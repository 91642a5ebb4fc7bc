// LmTransformer: the shell both language models share (transformer_xl.cpp, causal_lm.cpp): token
// embedding (times a scale), absolute positions when the model has them, dropout, N EncoderBlocks
// run causally over [memory; segment], a final LayerNorm when the subclass asks for one, dropout,
// and the output layer over the vocabulary (the embedding matrix when tie_weights, plus a bias).
// Memory (Dai et al. 2019 §3.2): layer i keeps the hidden states entering it at the last mem_len
// positions, detached; the next segment's queries sit after them (AttentionInputs positions), so
// every relative encoding measures the right distances.
//   tokens [B, L] -> logits [B, L, vocab]
// Parameters: embedding.weight [V, d], layers.<i>.{ln1, attn, ln2, mlp} (EncoderBlock), norm
// (final LayerNorm), output.bias [V] (and output.weight [V, d] without tie_weights). All weights
// N(0, 0.02) and LayerNorm gains N(1, 0.02), biases 0, as Transformer-XL's weights_init.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/layer_norm.h"
#include "layers/models/encoder.h"
#include "layers/models/model.h"
#include "layers/positional/absolute.h"

namespace relpos {

// The `model:` keys every language model of this shell shares, from ModelConfig::own.
struct LmConfig {
  int64_t mem_len = 0;      // hidden states kept from earlier segments as memory (0: none)
  bool tie_weights = true;  // the output layer is the embedding matrix (plus a bias)

  // The keys of config.own, checked.
  static LmConfig read(const ModelConfig& config);
};

// What a language model type makes of the shell.
struct LmShell {
  Options attention;             // the mapping every layer's attention is built from
  double embedding_scale = 1.0;  // multiplies the token embedding (Transformer-XL: sqrt(d_model))
  bool final_norm = false;       // a LayerNorm after the blocks
  LmContext context;             // memory, clamp_len, same_length as trained
  bool tie_weights = true;
  // Linear attention's running sums carried from segment to segment instead of hidden states.
  bool recurrent_state = false;
  // Whether the model takes clamp_len and same_length (Transformer-XL's relative positions);
  // other models refuse a context that sets them.
  bool clamps = false;
};

// The shell of a causal model over the registry's attention: the mapping as written ({type:
// softmax} when empty), a final LayerNorm after pre-LN blocks (as GPT-2), none after post-LN
// ones (as Transformer-XL), no memory.
LmShell causal_shell(const ModelConfig& config);

// The output layer: logits = h·Wᵀ + b, W the embedding matrix when tied.
class LmOutputLayer : public Module {
 public:
  LmOutputLayer(int64_t vocab, int64_t dim, bool tied, DType dtype);
  // h: [B, L, d], embedding [V, d] -> [B, L, V]
  Var forward(const Var& h, const Var& embedding) const;

 private:
  Var weight_;  // [V, d]; undefined when tied
  Var bias_;    // [V]
};

class LmTransformer : public LanguageModel {
 public:
  LmOutput forward(const Tensor& tokens, const LmState& state) override;
  LmContext context() const override { return context_; }
  void set_context(const LmContext& context) override;
  int64_t max_keys() const override { return max_keys_; }
  bool carries_state() const override { return context_.mem_len > 0 || recurrent_state_; }

  const ModuleList& layers() const { return *layers_; }

 protected:
  LmTransformer(const ModelConfig& config, Generator& gen, const LmShell& shell);

  // Refuses a context this model cannot run (called with the config's context and on every
  // set_context); the base checks what every LM shares.
  virtual void check_context(const LmContext& context) const;
  // Makes the layers follow a new context (Transformer-XL's clamp_len).
  virtual void apply_context(const LmContext& context) {}
  bool carries_recurrent_state() const { return recurrent_state_; }

 private:
  LmContext context_;
  double embedding_scale_;
  bool recurrent_state_;
  bool clamps_;
  int64_t max_keys_ = 0;  // the longest [memory; segment] its positions cover (0: any)
  std::shared_ptr<Embedding> embedding_;
  std::shared_ptr<LearnedPositionalEmbedding> learned_positions_;
  std::shared_ptr<SinusoidalPositionalEmbedding> sinusoidal_positions_;
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<ModuleList> layers_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<LmOutputLayer> output_;
};

// The name of layer i's memory in an LmState.
std::string lm_memory_name(int64_t layer);

}  // namespace relpos
