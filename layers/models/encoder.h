// TransformerEncoder: the encoder every classifier runs (EXPERIMENTS.md "Model details"): input
// embedding (tokens, pixel values through Linear(1, d), or an image's patches through
// Linear(patch pixels, d)), an optional learned CLS vector,
// absolute positions, embedding dropout, N blocks (pre-LN as LRA, post-LN as BERT; tied: one block
// applied N times) and the final LayerNorm of pre-LN; then pooling (CLS row or masked mean).
//   tokens [B, L] -> hidden [B, L', model_dim], L' = T + 1 with a CLS vector, else T; T = L, or
//   the number of patches of an image of L pixels
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/attention/multi_head.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/feed_forward.h"
#include "layers/layer_norm.h"
#include "layers/models/classifier_config.h"
#include "layers/models/model.h"
#include "layers/positional/absolute.h"

namespace relpos {

// One encoder block; submodules ln1, attn, ln2, mlp, dropout (the residual-branch dropout).
//   pre:  x = x + drop(attn(ln1(x)));  x = x + drop(mlp(ln2(x)))
//   post: x = ln1(x + drop(attn(x)));  x = ln2(x + drop(mlp(x)))
class EncoderBlock : public Module {
 public:
  EncoderBlock(const EncoderConfig& config, const MultiHeadAttentionConfig& attention,
               Generator& gen);

  // x: [B, L, d], key_mask [B, L] u8 or undefined -> [B, L, d]
  Var forward(const Var& x, const Tensor& key_mask);
  // Causal, after a memory (Transformer-XL): x [B, L, d] attends [memory; x], memory [B, M, d]
  // (undefined: none) -> [B, L, d]. Each query sees at most `window` keys ending at its own
  // position (0: every earlier one). Pre-LN normalizes memory and segment alike, as TXL.
  // `carry`: the attention's state across segments (causal linear attention), or null.
  Var forward_causal(const Var& x, const Var& memory, int64_t window = 0,
                     AttentionCarry* carry = nullptr);
  // A post-LN block whose attention reads x_i = table[ids_i] + positions_i, computed index-first
  // (model.index_first; MultiHeadAttention::forward_index_first); x is that input after the
  // embedding dropout, which only the residual path sees. -> [B, L, d]
  Var forward_index_first(const Var& x, const Tensor& ids, const Var& table, const Var& positions,
                          const Tensor& key_mask, bool causal);

  MultiHeadAttention& attention() { return *attn_; }

 private:
  // Post-LN: the rest of the block after its attention's output a: ln2(h + drop(mlp(h))) with
  // h = ln1(x + drop(a)).
  Var after_attention(const Var& x, const Var& a);

  bool pre_norm_;
  std::shared_ptr<LayerNorm> ln1_, ln2_;
  std::shared_ptr<MultiHeadAttention> attn_;
  std::shared_ptr<FeedForward> mlp_;
  std::shared_ptr<Dropout> dropout_;
};

// Appends `count` blocks to `layers`: the one loop of every model's trunk. Once the first is
// built, the parameters of the rest are checked against the memory the CPU has left (models are
// built there): a count past it is refused (OutOfMemory) before the machine's memory is spent
// building the blocks one by one.
void add_encoder_blocks(ModuleList& layers, int64_t count, const EncoderConfig& config,
                        const MultiHeadAttentionConfig& attention, Generator& gen);

struct EncoderOutput {
  Var hidden;       // [B, L', model_dim]
  Tensor key_mask;  // [B, L'] u8, with the CLS-vector column; undefined: every token is real
};

class TransformerEncoder : public Module {
 public:
  // Checks of the configs are make_model's and ClassifierConfig's; this builds what they describe.
  TransformerEncoder(const ModelConfig& config, const ClassifierConfig& classifier, Generator& gen);

  // tokens [B, L] i64/i32 (with [CLS] ... [SEP] ids when cls == "token"), key_mask [B, L] u8 or
  // undefined.
  EncoderOutput forward(const Tensor& tokens, const Tensor& key_mask = {});
  // -> [B, model_dim]: row 0 (pooling "cls") or the mean over real tokens ("mean").
  Var pool(const EncoderOutput& out) const;

  // The [CLS] / [SEP] ids the data must carry (cls: token), or none.
  SpecialTokens special_tokens() const { return classifier_.special_tokens(config_.vocab_size); }
  // What reads whole images of max_len pixels ("input 'patches'", "positional 'fastrpb2d'"), or
  // "" when nothing does.
  const std::string& whole_images_reader() const { return whole_images_reader_; }

  // What a user should know about this encoder (registered under `name`), one line each: a
  // relative encoding in the last block whose term cannot reach the pooled CLS row (FastRPB
  // leaves special rows out; no later block carries the content rows to CLS), so its weights get
  // no gradient; with one block the model is the same function as without the encoding.
  std::vector<std::string> warnings(const std::string& name) const;

  // Tokens a layer sees at most: max_len plus the CLS and SEP it adds or the data carries.
  int64_t sequence_len() const { return seq_len_; }
  // What every block's attention is built from (a shared encoding included; gen unset), for a
  // layer that attends over this encoder's outputs (dual_encoder's cross attention).
  const MultiHeadAttentionConfig& attention_config() const { return attention_config_; }
  const ModuleList& layers() const { return *layers_; }

 private:
  // The constructor's parts: the CLS vector and the input embedding; the absolute positions; what
  // every block's attention is built from (front / back: special tokens around the content).
  void add_input(Generator& gen);
  void add_positions(int64_t front, int64_t back, Generator& gen);
  MultiHeadAttentionConfig block_attention(int64_t front, int64_t back, Generator& gen) const;

  Var embed(const Tensor& tokens) const;  // [B, L] -> [B, T, d]
  // Input patches and a grid encoding (fastrpb2d) read whole images: a batch with padding
  // (key_mask [B, L] u8) or another length is refused; on a training step the padding is
  // counted on the device and the error raised when the step is read.
  void check_whole_images(const Tensor& tokens, const Tensor& key_mask) const;
  // What the first block's index-first attention reads: ids [B, L'] (with the CLS vector's id),
  // the table [V, d] they index (the embedding, plus the CLS vector's row), the positions.
  struct IndexFirstInputs {
    Tensor ids;
    Var table, positions;
  };
  IndexFirstInputs index_first_inputs(const Tensor& tokens) const;

  ModelConfig config_;
  ClassifierConfig classifier_;
  int64_t seq_len_ = 0;
  std::string whole_images_reader_;  // what reads whole images ("" when nothing does)
  MultiHeadAttentionConfig attention_config_;
  Var cls_;                               // [model_dim], cls == "vector"
  std::shared_ptr<Embedding> embedding_;  // input "tokens"
  std::shared_ptr<Linear> pixel_proj_;    // input "pixels"
  std::shared_ptr<Linear> patch_proj_;    // input "patches"
  std::shared_ptr<Embedding> special_;    // pixels with CLS/SEP tokens: [2, d]
  std::shared_ptr<LearnedPositionalEmbedding> learned_positions_;        // positions "learned"
  std::shared_ptr<LearnedGridPositionalEmbedding> grid_positions_;       // "learned2d"
  std::shared_ptr<SinusoidalPositionalEmbedding> sinusoidal_positions_;  // "sinusoidal"
  std::shared_ptr<LayerNorm> embedding_norm_;                            // post-LN
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<ModuleList> layers_;
  std::shared_ptr<LayerNorm> norm_;  // pre-LN
};

// The classifier heads' MLP: Dense -> ReLU -> ... -> Dense over widths {in, h1, ..., out};
// submodules fc1, fc2, ... (torch.nn.Linear init).
class MlpHead : public Module {
 public:
  MlpHead(const std::vector<int64_t>& widths, DType dtype, Generator& gen);

  // x: [B, in] -> [B, out]
  Var forward(const Var& x) const;

 private:
  std::vector<std::shared_ptr<Linear>> fcs_;
};

}  // namespace relpos
