// The trainer tests' tiny run (tests/train/tiny_run.h).
#include "tests/train/tiny_run.h"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "core/device.h"
#include "core/json.h"
#include "datasets/idx.h"

namespace relpos::test {

namespace fs = std::filesystem;

namespace {

// n 28x28 images of 4 classes: class c lights the c-th 14x14 quadrant (values 150-255) over
// a dim noise background (0-60), from a fixed seed.
void write_quadrant_images(const fs::path& dir, const std::string& prefix, int64_t n,
                           uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> images(n * 784), labels(n);
  for (int64_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(i % 4);
    labels[i] = static_cast<uint8_t>(label);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        const bool lit = (r / 14) * 2 + (c / 14) == label;
        images[i * 784 + r * 28 + c] = static_cast<uint8_t>(lit ? 150 + rng() % 106 : rng() % 61);
      }
  }
  write_idx((dir / (prefix + "-images-idx3-ubyte")).string(), {n, 28, 28}, images);
  write_idx((dir / (prefix + "-labels-idx1-ubyte")).string(), {n}, labels);
}

}  // namespace

std::string make_data(const ScratchDir& scratch) {
  const fs::path dir = scratch.path / "data";
  fs::create_directories(dir);
  write_quadrant_images(dir, "train", 96, 1);
  write_quadrant_images(dir, "t10k", 32, 2);
  return dir.string();
}

RunConfig tiny_config(const ScratchDir& scratch, const std::string& data_dir,
                      const std::string& name, std::vector<std::string> extra) {
  const std::string yaml = R"(
model:
  num_layers: 1
  num_heads: 2
  model_dim: 16
  mlp_dim: 32
  dropout: 0.1
  input: pixels
  attention: {type: softmax}
data: {dataset: mnist, image_pool: 7, batch_size: 8, val_fraction: 0.25, prefetch: 1}
optimizer: {type: adamw, lr: 0.01, weight_decay: 0.01}
schedule: {type: linear_decay, warmup_steps: 2}
train: {steps: 12, eval_every: 6, log_every: 3}
seed: 3
)";
  extra.push_back("data.dir=" + data_dir);
  extra.push_back("train.out=" + (scratch.path / name).string());
  extra.push_back("name=" + name);
  return parse_config(yaml, name, extra);
}

RunSummary train(const RunConfig& config, TrainerOptions options) {
  options.verbose = false;
  Trainer trainer(config, options);
  return trainer.run();
}

CheckpointData last_checkpoint(const RunConfig& config) {
  return read_checkpoint((fs::path(config.train.out) / "checkpoints" / "last.h5").string());
}

void check_same_params(const CheckpointData& a, const CheckpointData& b) {
  REQUIRE(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    CAPTURE(a.params[i].first);
    CHECK(a.params[i].first == b.params[i].first);
    CHECK(same_bits(a.params[i].second, b.params[i].second));
  }
}

void check_same_training_state(const CheckpointData& a, const CheckpointData& b) {
  check_same_params(a, b);
  REQUIRE(a.optimizer.size() == b.optimizer.size());
  for (size_t i = 0; i < a.optimizer.size(); ++i) {
    CAPTURE(a.optimizer[i].first);
    CHECK(a.optimizer[i].first == b.optimizer[i].first);
    REQUIRE(a.optimizer[i].second.size() == b.optimizer[i].second.size());
    for (const auto& entry : a.optimizer[i].second)
      CHECK(same_bits(entry.second, b.optimizer[i].second.at(entry.first)));
  }
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> training_devices(const std::string& what) {
  if (cuda_available()) return {"cpu", "cuda"};
  MESSAGE("SKIPPED (no CUDA device): " << what << " on a GPU");
  return {"cpu"};
}

int64_t check_no_host_reads(const RunConfig& config) {
  std::istringstream lines(read_text(std::filesystem::path(config.train.out) / "metrics.jsonl"));
  int64_t records = 0;
  for (std::string line; std::getline(lines, line);) {
    const Json record = Json::parse(line);
    if (record.at("event") != "train") continue;
    CAPTURE(line);
    CHECK(record.at("host_reads").get<int64_t>() == 0);
    ++records;
  }
  return records;
}

}  // namespace relpos::test
