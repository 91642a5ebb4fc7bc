// The Trainer end to end on a tiny generated image task (tests/train/tiny_run.h): it learns and
// writes its run folder, accumulates gradients like a bigger batch, stops early, stops on a
// non-finite loss naming the step (and, in anomaly mode, the op), says how to get missing data;
// and the dual encoder learns from generated retrieval pairs. Resuming: test_trainer_resume.cpp.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "autograd/grad_mode.h"
#include "datasets/idx.h"
#include "datasets/prepare.h"
#include "tests/harness.h"
#include "tests/train/tiny_run.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/task.h"
#include "train/trainer.h"
#include "train/training_state.h"

using namespace relpos;
namespace fs = std::filesystem;

using test::last_checkpoint;
using test::make_data;
using test::read_text;
using test::tiny_config;
using test::train;

TEST_CASE("trainer: a tiny run learns a tiny task and writes its run directory") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig config =
      tiny_config(scratch, data, "learn", {"train.steps=200", "train.eval_every=50"});
  const RunSummary r = train(config);
  CHECK(r.finished);
  CHECK(r.steps == 200);
  CHECK(r.test_last.get("accuracy") >= 0.95);
  CHECK(r.test_best.get("accuracy") >= 0.95);
  CHECK(r.test_last.count == 32);
  CHECK(r.parameters > 0);
  CHECK(r.peak_memory_bytes > 0);
  const fs::path dir = config.train.out;
  for (const char* file : {"config.yaml", "metrics.jsonl", "log.txt", "summary.json",
                           "checkpoints/last.h5", "checkpoints/best.h5"})
    CHECK_MESSAGE(fs::exists(dir / file), file);
  const std::string metrics = read_text(dir / "metrics.jsonl");
  CHECK(metrics.find("\"event\": \"train\"") != std::string::npos);
  CHECK(metrics.find("\"event\": \"eval\"") != std::string::npos);
  CHECK(metrics.find("\"weights\": \"best\"") != std::string::npos);
  const std::string summary = read_text(dir / "summary.json");
  CHECK(summary.find("\"peak_memory_bytes\"") != std::string::npos);
  CHECK(summary.find("\"test_best\"") != std::string::npos);
  // The loaded configuration, completed with the defaults its layers read as they were built.
  RunConfig completed = config;
  make_task(completed, Device::cpu());
  complete_config(completed);
  CHECK(completed.yaml != config.yaml);
  CHECK(read_text(dir / "config.yaml") == completed.yaml);
  CHECK(last_checkpoint(config).texts.at("config") == completed.yaml);
}

TEST_CASE("trainer: accumulating two half batches matches one full batch") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const std::vector<std::string> no_noise{"model.dropout=0", "train.steps=1",
                                          "schedule={type: constant}", "train.eval_every=1"};
  auto whole = no_noise, halves = no_noise;
  whole.push_back("data.batch_size=8");
  halves.push_back("data.batch_size=4");
  halves.push_back("train.accumulate=2");
  const RunConfig a = tiny_config(scratch, data, "whole", whole);
  const RunConfig b = tiny_config(scratch, data, "halves", halves);
  train(a);
  train(b);
  const CheckpointData ca = last_checkpoint(a), cb = last_checkpoint(b);
  REQUIRE(ca.params.size() == cb.params.size());
  for (size_t i = 0; i < ca.params.size(); ++i) {
    CAPTURE(ca.params[i].first);
    CHECK_CLOSE(cb.params[i].second, ca.params[i].second, 1e-5, 1e-6);
  }
}

TEST_CASE("trainer: early stopping after `patience` validations without improvement") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  // lr 0: the first validation is the best there will be.
  const RunConfig config =
      tiny_config(scratch, data, "patience",
                  {"optimizer.lr=0", "train.steps=100", "train.eval_every=2", "train.patience=2"});
  const RunSummary r = train(config);
  CHECK(r.stopped_early);
  CHECK(r.steps == 6);  // validations at 2 (best), 4, 6 (second without improvement)
  CHECK(r.best_step == 2);
}

TEST_CASE("trainer: a non-finite loss stops the run with its step, and anomaly mode names the op") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const std::vector<std::string> explode{"optimizer={type: sgd, lr: 1.0e30}",
                                         "schedule={type: constant}", "train.steps=50"};
  auto logged_every = [&](int64_t every) {
    auto extra = explode;
    extra.push_back(fmt::format("train.log_every={}", every));
    return test::error_of(
        [&] { train(tiny_config(scratch, data, fmt::format("nan_{}", every), extra)); });
  };
  const std::string plain = logged_every(1);
  CHECK(plain.find("[train] the ") == 0);
  CHECK(plain.find("at step") != std::string::npos);
  CHECK(plain.find("detect_anomaly") != std::string::npos);
  // The loss and gradient norm are read from the device at log steps only; the step named is
  // still the first non-finite one, as when every step is read.
  CHECK(logged_every(40) == plain);
  // log.txt says why the run stopped (it ended with the run's first line).
  const std::string log = read_text(scratch.path / "nan_40" / "log.txt");
  CHECK(log.find("] stopped: " + plain + "\n") != std::string::npos);

  // Diverged weights met first by a validation: the error names it and its step.
  // (lr 1e300 makes the first update's f32 weights infinite; validation meets NaN logits.)
  const std::vector<std::string> validate_first{"optimizer={type: sgd, lr: 1.0e300}",
                                                "schedule={type: constant}", "train.steps=50",
                                                "train.eval_every=1"};
  const std::string in_validation =
      test::error_of([&] { train(tiny_config(scratch, data, "val_nan", validate_first)); });
  CHECK(in_validation.find("[train] validation at step 1: the val loss is ") == 0);

  auto with_anomaly = explode;
  with_anomaly.push_back("debug.detect_anomaly=true");
  const std::string named =
      test::error_of([&] { train(tiny_config(scratch, data, "anomaly", with_anomaly)); });
  set_detect_anomaly(false);
  CHECK(named.find("[train] step ") == 0);
  CHECK(named.find("[anomaly]") != std::string::npos);
  CHECK(named.find("produced NaN/Inf") != std::string::npos);
}

TEST_CASE("trainer: missing data says how to get it") {
  test::ScratchDir scratch;
  const RunConfig config = tiny_config(scratch, (scratch.path / "nowhere").string(), "nodata");
  fs::create_directories(scratch.path / "empty");
  const RunConfig empty = tiny_config(scratch, (scratch.path / "empty").string(), "empty");
  const std::string in_empty = test::error_of([&] { train(empty); });
  CHECK(in_empty.find("train-images-idx3-ubyte[.gz] not found in '") != std::string::npos);
  CHECK(in_empty.find("relpos data prepare mnist") != std::string::npos);
  const std::string e = test::error_of([&] { train(config); });
  CHECK(e.find("[data] no folder '") == 0);
  CHECK(e.find("relpos data prepare mnist") != std::string::npos);
}

namespace {

// Retrieval TSVs under scratch/aan (train 128, eval and test 32 pairs): label 1 when both
// documents repeat the same letter, 0 otherwise.
void write_letter_pairs(test::ScratchDir& scratch) {
  fs::create_directories(scratch.path / "aan");
  auto write_split = [&](const std::string& split, int n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string tsv;
    for (int i = 0; i < n; ++i) {
      const char a = static_cast<char>('a' + rng() % 6);
      const bool same = i % 2 == 0;
      const char b = same ? a : static_cast<char>('a' + (a - 'a' + 1 + rng() % 5) % 6);
      tsv += fmt::format("{}\td{}\te{}\t{}\t{}\n", same ? 1 : 0, i, i,
                         std::string(5 + rng() % 6, a), std::string(5 + rng() % 6, b));
    }
    scratch.write("aan/new_aan_pairs." + split + ".tsv", tsv);
  };
  write_split("train", 128, 1);
  write_split("eval", 32, 2);
  write_split("test", 32, 3);
}

RunSummary train_pairs(test::ScratchDir& scratch, const std::string& model) {
  const std::string yaml = "model:\n" + model + R"(
data: {dataset: aan, max_len: 16, batch_size: 16, drop_last: true}
optimizer: {type: adamw, lr: 0.01}
train: {steps: 120, eval_every: 40}
)";
  const RunConfig config = parse_config(yaml, "pairs",
                                        {"data.dir=" + (scratch.path / "aan").string(),
                                         "train.out=" + (scratch.path / "run").string()});
  return train(config);
}

}  // namespace

TEST_CASE("trainer: the dual encoder learns from document pairs (retrieval TSVs)") {
  test::ScratchDir scratch;
  write_letter_pairs(scratch);
  const RunSummary r = train_pairs(scratch, R"(  type: dual_encoder
  combine: features
  num_layers: 1
  num_heads: 2
  model_dim: 16
  mlp_dim: 32
  dropout: 0
  attention: {type: linear, feature_map: elu1}
  positional: {type: fastrpb})");
  CHECK(r.finished);
  CHECK(r.test_best.count == 32);
  CHECK(r.test_best.get("accuracy") >= 0.9);
}

TEST_CASE("trainer: the dual encoder with cross attention and skew learns the pairs from YAML") {
  // Each document attends to the other (seed 004's cross attention, Lq != Lk) before pooling.
  test::ScratchDir scratch;
  write_letter_pairs(scratch);
  const RunSummary r = train_pairs(scratch, R"(  type: dual_encoder
  interaction: cross_attention
  num_layers: 1
  num_heads: 2
  model_dim: 16
  mlp_dim: 32
  dropout: 0
  attention: {type: softmax}
  positional: {type: skew})");
  CHECK(r.finished);
  CHECK(r.test_best.get("accuracy") >= 0.9);
}

// Trains `config_file` with `overrides` on the quadrant digits, on the CPU and on a GPU where
// there is one, validating and saving inside the log windows of 4 updates: each of the 3 train
// records must count 0 reads from the device (on a GPU each is a device-to-host copy and a wait).
namespace {
void check_updates_read_nothing(const std::string& what, const std::string& config_file,
                                std::vector<std::string> overrides) {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  for (const std::string& device : test::training_devices(what)) {
    CAPTURE(device);
    std::vector<std::string> all = overrides;
    all.insert(all.end(), {"data.dir=" + data, "train.out=" + (scratch.path / device).string(),
                           "train.epochs=0", "train.steps=12", "train.log_every=4",
                           "train.eval_every=3", "train.save_every=5", "device=" + device});
    const RunConfig config = load_config(RELPOS_SOURCE_DIR "/" + config_file, all);
    train(config);
    CHECK(test::check_no_host_reads(config) == 3);
  }
}
}  // namespace

// Issue 29: the demo's own model and optimizer (configs/demo) on the tiny task.
TEST_CASE("trainer: a steady-state update of the demo classifier reads nothing back") {
  check_updates_read_nothing("the demo classifier's device-to-host copies",
                             "configs/demo/mnist_sikf_fastrpb2d.yaml",
                             {"schedule.warmup_steps=2", "train.clip_grad_norm=0.5"});
}

// The cpu scale's Table 2 model (3 x 3 patches over whole 28 x 28 images, scales.yaml) checks in
// every forward that no image is padded; inside an update that count stays on the device too.
TEST_CASE("trainer: a steady-state update of the Table 2 patch model reads nothing back") {
  check_updates_read_nothing(
      "the patch model's device-to-host copies", "configs/mnist/original_none.yaml",
      {"data.image_pool=1", "model.input=patches", "model.patch_size=3", "model.patch_stride=2",
       "model.positions=learned", "model.cls=vector", "model.head=mlp", "model.num_layers=1",
       "model.num_heads=2", "model.model_dim=16", "model.qkv_dim=0", "model.mlp_dim=32",
       "data.batch_size=8", "data.val_fraction=0.25",
       "schedule={type: linear_decay, warmup_steps: 2}"});
}

// The index-first demo checks its token ids in every forward: inside an update that check is
// counted on the device and read with the window, like the CUDA id checks.
TEST_CASE("trainer: a steady-state update of the index-first ListOps demo reads nothing back") {
  test::ScratchDir scratch;
  PrepareRequest request{(scratch.path / "listops").string(), Options("prepare")};
  request.options.set("train", "200").set("val", "40").set("test", "40");
  find_preparer("listops")(request);
  const fs::path out = scratch.path / "demo";
  const RunConfig config = load_config(
      RELPOS_SOURCE_DIR "/configs/demo/listops_index_first.yaml",
      {"data.dir=" + request.out_dir, "train.out=" + out.string(), "train.epochs=0",
       "train.steps=6", "train.log_every=2", "train.eval_every=3", "schedule.warmup_steps=1"});
  train(config);
  CHECK(test::check_no_host_reads(config) == 3);
}
