// The trainer's checkpoint policy and fine-tuning: train.save_every writes step checkpoints
// without changing the run, train.keep_last keeps the newest, a step checkpoint resumes
// bit-exactly; train.init_from takes the chosen parameters (by name, shape-checked) and starts
// the optimizer and position afresh, and such a run resumes bit-exactly too.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/harness.h"
#include "tests/train/tiny_run.h"
#include "train/checkpoint.h"
#include "train/init_from.h"

using namespace relpos;
using test::check_same_params;
using test::check_same_training_state;
using test::last_checkpoint;
using test::make_data;
using test::same_bits;
using test::tiny_config;
using test::train;
namespace fs = std::filesystem;

namespace {

// Dropout, shuffling, a decaying lr, clipping and accumulation are all in play.
const std::vector<std::string> kCommon{"train.clip_grad_norm=0.5", "train.accumulate=2"};

std::vector<std::string> with(std::vector<std::string> overrides,
                              const std::vector<std::string>& more) {
  overrides.insert(overrides.end(), more.begin(), more.end());
  return overrides;
}

// The file names in a run's checkpoints/ folder.
std::set<std::string> checkpoint_files(const RunConfig& config) {
  std::set<std::string> out;
  for (const auto& entry : fs::directory_iterator(fs::path(config.train.out) / "checkpoints"))
    out.insert(entry.path().filename().string());
  return out;
}

std::map<std::string, Tensor> params_by_name(const Module& module) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, p] : module.named_parameters()) out[name] = p.value().clone();
  return out;
}

std::map<std::string, Tensor> params_by_name(const CheckpointData& data) {
  return {data.params.begin(), data.params.end()};
}

TrainerOptions quiet() {
  TrainerOptions options;
  options.verbose = false;
  return options;
}

std::string error_of(const RunConfig& config) {
  try {
    Trainer trainer(config, quiet());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "checkpoint policy: save_every and keep_last leave the run unchanged; a step "
    "checkpoint resumes bit-exactly") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig straight = tiny_config(scratch, data, "straight", kCommon);
  const RunConfig every4 = tiny_config(scratch, data, "every4",
                                       with(kCommon, {"train.save_every=4", "train.keep_last=2"}));
  train(straight);
  train(every4);
  // Steps 4, 8 and 12 were written; the newest two are kept beside last.h5 and best.h5.
  CHECK(checkpoint_files(every4) ==
        std::set<std::string>{"best.h5", "last.h5", "step-00000008.h5", "step-00000012.h5"});
  check_same_params(last_checkpoint(straight), last_checkpoint(every4));
  const fs::path dir = fs::path(every4.train.out) / "checkpoints";
  const CheckpointData at8 = read_checkpoint((dir / "step-00000008.h5").string());
  CHECK(at8.ints.at("step") == 8);
  check_same_params(read_checkpoint((dir / "step-00000012.h5").string()),
                    last_checkpoint(straight));

  // Resuming from step 8 (between validations at 6 and 12) ends where the straight run does.
  fs::copy_file(dir / "step-00000008.h5", scratch.path / "from8.h5");
  TrainerOptions resumed;
  resumed.resume = (scratch.path / "from8.h5").string();
  const RunSummary second = train(every4, resumed);
  CHECK(second.steps == 12);
  check_same_training_state(last_checkpoint(straight), last_checkpoint(every4));
}

TEST_CASE(
    "checkpoint policy: keep_last 1 keeps the newest; a resumed run leaves later steps' "
    "files until it writes them again") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig run = tiny_config(scratch, data, "keep1",
                                    with(kCommon, {"train.save_every=3", "train.keep_last=1"}));
  train(run);
  CHECK(checkpoint_files(run) == std::set<std::string>{"best.h5", "last.h5", "step-00000012.h5"});
  // A session stopped at 6 and one resumed from there: step 9 replaces 6, 12 replaces 9.
  const RunConfig again = tiny_config(scratch, data, "keep1_again",
                                      with(kCommon, {"train.save_every=3", "train.keep_last=1"}));
  TrainerOptions stop;
  stop.stop_at_step = 6;
  train(again, stop);
  CHECK(checkpoint_files(again) == std::set<std::string>{"best.h5", "last.h5", "step-00000006.h5"});
  const fs::path dir = fs::path(again.train.out) / "checkpoints";
  fs::copy_file(fs::path(run.train.out) / "checkpoints" / "step-00000012.h5",
                dir / "step-00000012.h5");  // as if an earlier session had got further
  TrainerOptions resumed;
  resumed.resume = (dir / "step-00000006.h5").string();
  resumed.stop_at_step = 9;
  train(again, resumed);
  CHECK(checkpoint_files(again) ==
        std::set<std::string>{"best.h5", "last.h5", "step-00000009.h5", "step-00000012.h5"});
  resumed.resume = (dir / "step-00000009.h5").string();
  resumed.stop_at_step = 0;
  train(again, resumed);
  CHECK(checkpoint_files(again) == std::set<std::string>{"best.h5", "last.h5", "step-00000012.h5"});
  check_same_params(last_checkpoint(run), last_checkpoint(again));
}

TEST_CASE("checkpoint policy: bad save_every, keep_last and init_params are refused at load") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const auto load_error = [&](const std::vector<std::string>& overrides) {
    try {
      tiny_config(scratch, data, "bad", overrides);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(load_error({"train.keep_last=2"}).find("set train.save_every too") != std::string::npos);
  CHECK(load_error({"train.save_every=-1"}).find("must be >= 0") != std::string::npos);
  CHECK(load_error({"train.init_params=[]"}).find("train.init_params is empty") !=
        std::string::npos);
  CHECK(load_error({"train.init_params=head.*"}).find("expected a list") != std::string::npos);
}

TEST_CASE("init_from: parameter_chosen reads globs in order, '!' leaving out") {
  CHECK(parameter_chosen("head.fc2.weight", {"*"}));
  CHECK_FALSE(parameter_chosen("head.fc2.weight", {"*", "!head.*"}));
  CHECK(parameter_chosen("head.fc2.weight", {"*", "!head.*", "head.fc2.*"}));
  CHECK(parameter_chosen("encoder.layers.0.ln1.weight", {"encoder.layers.?.*"}));
  CHECK_FALSE(parameter_chosen("encoder.layers.10.ln1.weight", {"encoder.layers.?.ln1.*"}));
  CHECK_FALSE(parameter_chosen("encoder.norm.weight", {"head.*"}));
}

TEST_CASE(
    "init_from: the chosen parameters come from the checkpoint, the rest and the "
    "optimizer start fresh, and the run resumes bit-exactly") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig source = tiny_config(scratch, data, "source", kCommon);
  train(source);
  const std::string from = (fs::path(source.train.out) / "checkpoints" / "last.h5").string();
  const std::map<std::string, Tensor> trained = params_by_name(read_checkpoint(from));

  // Every parameter.
  const RunConfig all =
      tiny_config(scratch, data, "all", with(kCommon, {"train.init_from=" + from}));
  {
    Trainer trainer(all, quiet());
    const std::map<std::string, Tensor> start = params_by_name(trainer.model());
    REQUIRE(start.size() == trained.size());
    for (const auto& entry : start) {
      const std::string& name = entry.first;  // no structured binding in CAPTURE (clang)
      CAPTURE(name);
      CHECK(same_bits(entry.second, trained.at(name)));
    }
  }

  // All but the head: the head is the fresh initialization of this seed.
  const RunConfig fresh = tiny_config(scratch, data, "fresh", kCommon);
  const RunConfig body = tiny_config(
      scratch, data, "body",
      with(kCommon, {"train.init_from=" + from, "train.init_params=[\"*\", \"!head.*\"]"}));
  std::map<std::string, Tensor> initial;
  {
    Trainer trainer(fresh, quiet());
    initial = params_by_name(trainer.model());
  }
  {
    Trainer trainer(body, quiet());
    int from_head = 0;
    for (const auto& entry : params_by_name(trainer.model())) {
      const std::string& name = entry.first;
      CAPTURE(name);
      const bool head = name.rfind("head.", 0) == 0;
      from_head += head ? 1 : 0;
      CHECK(same_bits(entry.second, head ? initial.at(name) : trained.at(name)));
    }
    CHECK(from_head > 0);
  }

  // The fine-tuning run counts its own steps with a fresh optimizer, and resumes bit-exactly.
  TrainerOptions again;
  again.overwrite = true;  // the folder the Trainer above opened
  const RunSummary tuned = train(body, again);
  CHECK(tuned.steps == 12);
  const CheckpointData end = last_checkpoint(body);
  CHECK(end.ints.at("step") == 12);
  const RunConfig split = tiny_config(
      scratch, data, "body_split",
      with(kCommon, {"train.init_from=" + from, "train.init_params=[\"*\", \"!head.*\"]"}));
  TrainerOptions stop;
  stop.stop_at_step = 5;
  train(split, stop);
  fs::remove(from);  // a resumed run no longer reads init_from
  TrainerOptions resumed;
  resumed.resume = (fs::path(split.train.out) / "checkpoints" / "last.h5").string();
  train(split, resumed);
  check_same_params(end, last_checkpoint(split));
}

TEST_CASE(
    "init_from: a missing file, a shape mismatch or a pattern that chooses nothing is "
    "refused, naming it, before the run folder is made") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig source = tiny_config(scratch, data, "source", {});
  train(source);
  const std::string from = (fs::path(source.train.out) / "checkpoints" / "last.h5").string();

  const RunConfig wider =
      tiny_config(scratch, data, "wider", {"model.mlp_dim=24", "train.init_from=" + from});
  const std::string shape = error_of(wider);
  CHECK(shape.find("parameter 'encoder.layers.0.mlp.fc1.") != std::string::npos);
  const bool names_shapes =
      shape.find("[32] there, the model's is [24]") != std::string::npos ||
      shape.find("[32, 16] there, the model's is [24, 16]") != std::string::npos;
  CHECK(names_shapes);
  CHECK_FALSE(fs::exists(wider.train.out));

  const RunConfig typo =
      tiny_config(scratch, data, "typo",
                  {"train.init_from=" + from, "train.init_params=[\"encoder.layer.*\"]"});
  CHECK(error_of(typo).find("'encoder.layer.*' matches no parameter") != std::string::npos);
  CHECK_FALSE(fs::exists(typo.train.out));

  const RunConfig missing = tiny_config(scratch, data, "missing",
                                        {"train.init_from=" + (scratch.path / "none.h5").string()});
  CHECK(error_of(missing).find("none.h5") != std::string::npos);
  CHECK_FALSE(fs::exists(missing.train.out));

  // Only the chosen parameters need to fit: the wider MLP's blocks left out, the rest taken.
  const RunConfig part = tiny_config(scratch, data, "part",
                                     {"model.mlp_dim=24", "train.init_from=" + from,
                                      "train.init_params=[\"*\", \"!*.mlp.*\", \"!head.*\"]"});
  CHECK(error_of(part).empty());
}
