// ClassifierConfig: the `model:` keys of the classifiers' encoder (sequence_classifier,
// dual_encoder; layers/models/encoder.h): the input (tokens, pixels, an image's patches), the
// CLS, pooling and head, read from ModelConfig::own by one reader both types call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layers/image_patches.h"
#include "layers/models/model.h"

namespace relpos {

struct ClassifierConfig {
  int64_t num_classes = 0;  // 0: taken from the dataset
  // Input: "tokens" (Embedding [vocab(+specials), model_dim]), "pixels" (value / 255 through
  // Linear(1, model_dim); ids are pixel intensities 0-255) or "patches" (the ids are a square
  // image of max_len pixels; each token is a patch_size x patch_size patch of value / 255, one
  // every patch_stride pixels, through Linear(patch_size^2, model_dim): layers/image_patches.h).
  std::string input = "tokens";
  int64_t patch_size = 0;           // input "patches"; 0: 3
  int64_t patch_stride = 0;         // input "patches"; 0: 2
  double embedding_init_std = 1.0;  // N(0, std) for the token embedding (LRA: 1, BERT: 0.02)
  // positions "learned2d": [rows, cols] with rows x cols = the tokens of an image (row-major);
  // each CLS / SEP gets its own vector.
  std::vector<int64_t> position_grid;
  double position_init_std = 0.02;  // N(0, std) for learned positions, each table (LRA, BERT)
  // The CLS: "vector" (a learned zero-initialized vector prepended after embedding: LRA), "token"
  // (the data carries [CLS] ... [SEP] as ids vocab_size and vocab_size + 1: BERT), "none".
  std::string cls = "vector";
  std::string pooling = "cls";  // cls | mean (over real tokens)
  // Head on the pooled vector: "mlp" (Dense(mlp_dim) -> ReLU -> Dense(classes): LRA) or "tanh"
  // (BERT pooler Dense(model_dim) -> tanh -> Dense(classes)).
  std::string head = "mlp";
  bool tied_blocks = false;       // one block applied num_layers times (LRA ListOps)
  bool embedding_norm = true;     // post-LN: a LayerNorm on the embeddings (BERT); false: none
  bool share_positional = false;  // one encoding for all layers (SPE as in LRA)

  // The keys of config.own (trunk defaults applied), with the checks that need no sizes.
  static ClassifierConfig read(const ModelConfig& config);
  // The checks that need vocab_size, max_len and num_classes (made before building).
  void check_sizes(const ModelConfig& config) const;

  // input "patches": the image (side sqrt(max_len)) and its patches.
  PatchGeometry patch_geometry(int64_t max_len) const;
  // The tokens the encoder makes of max_len ids: max_len, or the patches of the image.
  int64_t content_tokens(int64_t max_len) const;
  // cls "token": [CLS] = vocab_size, [SEP] = vocab_size + 1; otherwise none.
  SpecialTokens special_tokens(int64_t vocab_size) const;
};

}  // namespace relpos
