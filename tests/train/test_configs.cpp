// Every experiment file under configs/ loads (bases, keys, types) and builds its model with the
// vocabulary and classes of its dataset, so every attention / positional option in them is one
// a component reads. Bases are checked through the files that include them.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "layers/models/model.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/task.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;

TEST_CASE("configs: every experiment file loads and builds its model, optimizer and schedule") {
  // vocab_size, num_classes of each dataset's reader (datasets/*.h).
  const std::map<std::string, std::pair<int64_t, int64_t>> sizes = {
      {"mnist", {256, 10}},
      {"fashion-mnist", {256, 10}},
      {"listops", {17, 10}},
      {"imdb", {257, 2}},
      {"aan", {257, 2}},
      {"cifar10", {256, 10}},
      // Character corpora: the symbols of the training split (Transformer-XL's enwik8 has 204,
      // text8 27 (a-z and space); moby-dick as `relpos data prepare` writes it).
      {"enwik8", {204, 0}},
      {"text8", {27, 0}},
      {"moby-dick", {85, 0}}};
  // Parameter counts against the Transformer-XL paper's: 41M (12 layers), 277M (24 layers).
  std::map<std::string, int64_t> counts;
  int64_t checked = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(RELPOS_SOURCE_DIR) / "configs")) {
    const fs::path& path = entry.path();
    if (path.extension() != ".yaml" || path.filename() == "base.yaml") continue;
    CAPTURE(path.string());
    const RunConfig config = load_config(path.string());
    REQUIRE(sizes.count(config.data.dataset));
    ModelConfig model = config.model;
    const auto [vocab, classes] = sizes.at(config.data.dataset);
    complete_model_config(model, config, config.data.tokenizer == "lra_2021" ? 16 : vocab, classes);
    Generator gen(0);
    const auto built = make_model(model, gen);
    CHECK(built->num_parameters() > 0);
    counts[config.name] = built->num_parameters();
    const auto optimizer = make_optimizer(built->parameters(), config.optimizer);
    CHECK(make_schedule(run_schedule_options(config, 1000), optimizer->lr())->lr_at(10) >= 0);
    ++checked;
  }
  CHECK(checked >= 90);  // the paper's LRA cells, the MNIST table and the demos
  MESSAGE("enwik8_txl_base: " << counts["enwik8_txl_base"]
                              << " parameters, enwik8_txl_large: " << counts["enwik8_txl_large"]);
  CHECK(std::abs(counts["enwik8_txl_base"] / 41e6 - 1) < 0.01);
  CHECK(std::abs(counts["enwik8_txl_large"] / 277e6 - 1) < 0.01);
}
