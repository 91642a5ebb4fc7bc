// ClassifierConfig (layers/models/classifier_config.h): the classifier keys and their checks.
#include "layers/models/classifier_config.h"

namespace relpos {
namespace {

constexpr const char* kWho = "model";

}  // namespace

ClassifierConfig ClassifierConfig::read(const ModelConfig& config) {
  const Options& o = config.own;
  ClassifierConfig c;
  c.num_classes = o.get_size("num_classes", c.num_classes, 0);
  c.input = o.get<std::string>("input", c.input);
  c.patch_size = o.get_size("patch_size", c.patch_size, 0);
  c.patch_stride = o.get_size("patch_stride", c.patch_stride, 0);
  c.embedding_init_std = o.get<double>("embedding_init_std", c.embedding_init_std);
  c.position_grid = o.get_list<int64_t>("position_grid", c.position_grid);
  c.position_init_std = o.get<double>("position_init_std", c.position_init_std);
  c.cls = o.get<std::string>("cls", c.cls);
  c.pooling = o.get<std::string>("pooling", c.pooling);
  c.head = o.get<std::string>("head", c.head);
  c.tied_blocks = o.get<bool>("tied_blocks", c.tied_blocks);
  c.embedding_norm = o.get<bool>("embedding_norm", c.embedding_norm);
  c.share_positional = o.get<bool>("share_positional", c.share_positional);

  check_model_choice("input", c.input, {"tokens", "pixels", "patches"});
  check_model_choice("cls", c.cls, {"vector", "token", "none"});
  check_model_choice("pooling", c.pooling, {"cls", "mean"});
  check_model_choice("head", c.head, {"mlp", "tanh"});
  RELPOS_CHECK(c.embedding_init_std > 0, kWho, "embedding_init_std must be positive, got {}",
               c.embedding_init_std);
  RELPOS_CHECK(c.position_init_std >= 0, kWho, "position_init_std must be >= 0, got {}",
               c.position_init_std);
  RELPOS_CHECK(c.pooling != "cls" || c.cls != "none", kWho,
               "pooling 'cls' needs a CLS (cls: vector or token), got cls 'none'");
  RELPOS_CHECK(c.input == "patches" || (c.patch_size == 0 && c.patch_stride == 0), kWho,
               "patch_size and patch_stride are read by input 'patches' only, got input '{}'",
               c.input);
  RELPOS_CHECK(c.input != "patches" || c.cls != "token", kWho,
               "input 'patches' reads whole images: [CLS] / [SEP] ids among the pixels would be "
               "read as pixels (use cls: vector)");
  RELPOS_CHECK(config.positions == "learned2d" || c.position_grid.empty(), kWho,
               "position_grid is read by positions 'learned2d' only, got positions '{}'",
               config.positions);
  if (config.index_first) {
    refuse_index_first_unless(c.input == "tokens",
                              "input '" + c.input + "' goes through a projection, not a lookup");
    refuse_index_first_unless(
        !c.embedding_norm,
        "embedding_norm: true puts a LayerNorm on the embeddings (set it false)");
  }
  return c;
}

void ClassifierConfig::check_sizes(const ModelConfig& config) const {
  RELPOS_CHECK(num_classes > 0, kWho,
               "num_classes must be positive (0 means: take it from the dataset first), got {}",
               num_classes);
  RELPOS_CHECK(input == "tokens" || config.vocab_size == 256, kWho,
               "input '{}' takes 8-bit values (ids 0-255): vocab_size must be 256, got {}", input,
               config.vocab_size);
  if (input == "patches") {
    const PatchGeometry g = patch_geometry(config.max_len);
    RELPOS_CHECK(g.side > 0, kWho,
                 "input 'patches' reads a square image: max_len {} is not a square number of "
                 "pixels",
                 config.max_len);
    RELPOS_CHECK(g.stride > 0 && g.size >= g.stride && g.side % g.stride == 0, kWho,
                 "input 'patches' needs patch_stride > 0 dividing the image side {} and "
                 "patch_size >= patch_stride (every pixel in a patch), got patch_size {} "
                 "patch_stride {}",
                 g.side, g.size, g.stride);
  }
  if (config.positions == "learned2d") {
    const int64_t tokens = content_tokens(config.max_len);
    // checked_numel: a product past int64 could wrap onto the number of tokens.
    RELPOS_CHECK(position_grid.size() == 2 && position_grid[0] > 0 && position_grid[1] > 0 &&
                     checked_numel(position_grid) == tokens,
                 kWho,
                 "positions 'learned2d' needs position_grid: [rows, cols] with rows x cols = "
                 "{} (the tokens of the image, row-major), got [{}]",
                 tokens, fmt::join(position_grid, ", "));
  }
}

PatchGeometry ClassifierConfig::patch_geometry(int64_t max_len) const {
  return {square_side(max_len), patch_size > 0 ? patch_size : 3,
          patch_stride > 0 ? patch_stride : 2};
}

int64_t ClassifierConfig::content_tokens(int64_t max_len) const {
  return input == "patches" ? patch_geometry(max_len).tokens() : max_len;
}

SpecialTokens ClassifierConfig::special_tokens(int64_t vocab_size) const {
  if (cls == "token") return {vocab_size, vocab_size + 1};
  return {};
}

}  // namespace relpos
