// The trainer's resume: the same seed gives the same run and an interrupted run resumed ends
// bit-exactly where an uninterrupted one does; a checkpoint of an earlier relpos still resumes;
// the drift bound that test uses tells lost state from rounding; and every entry of a checkpoint
// round-trips through the training state's one list.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "tests/harness.h"
#include "tests/train/tiny_run.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"
#include "train/task.h"
#include "train/training_state.h"

using namespace relpos;
using test::check_same_params;
using test::check_same_training_state;
using test::last_checkpoint;
using test::make_data;
using test::read_text;
using test::same_bits;
using test::tiny_config;
using test::train;
namespace fs = std::filesystem;

namespace {

// A checkpoint of an earlier relpos at step 5 of the tiny run, and the overrides it was run with.
const fs::path kFixture = fs::path(RELPOS_SOURCE_DIR) / "tests/train/fixtures/resume_at_5.h5";
const std::vector<std::string> kCommon{"train.clip_grad_norm=0.5", "train.accumulate=2"};

// ||a - b|| / ||a|| over every parameter of two checkpoints together.
double relative_distance(const CheckpointData& a, const CheckpointData& b) {
  REQUIRE(a.params.size() == b.params.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.params.size(); ++i) {
    REQUIRE(a.params[i].first == b.params[i].first);
    const Tensor x = a.params[i].second.contiguous(), y = b.params[i].second.contiguous();
    REQUIRE(x.shape() == y.shape());
    for (int64_t k = 0; k < x.numel(); ++k) {
      const double u = x.data<float>()[k], v = y.data<float>()[k];
      diff += (u - v) * (u - v);
      norm += u * u;
    }
  }
  return std::sqrt(diff / norm);
}

// The records of a run's metrics.jsonl as "event weights step: loss" (a train record's loss is
// its mean over the record's updates), those of `event` alone unless it is empty.
std::vector<std::string> record_losses(const RunConfig& config, const std::string& event = "") {
  std::vector<std::string> records;
  std::istringstream lines(read_text(fs::path(config.train.out) / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const Json record = Json::parse(line);
    if (event.empty() || record.at("event") == event)
      records.push_back(fmt::format("{} {} {}: {}", record.at("event").get<std::string>(),
                                    record.value("weights", ""), record.at("step").get<int64_t>(),
                                    record.at("loss").get<double>()));
  }
  return records;
}

}  // namespace

TEST_CASE("trainer: same seed and config give the same parameters; resume is bit-exact") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  // Dropout, shuffling, a decaying lr, clipping and accumulation are all in play.
  const std::vector<std::string>& common = kCommon;
  const RunConfig straight = tiny_config(scratch, data, "straight", common);
  const RunConfig again = tiny_config(scratch, data, "again", common);
  const RunConfig split = tiny_config(scratch, data, "split", common);
  train(straight);
  train(again);
  check_same_params(last_checkpoint(straight), last_checkpoint(again));

  TrainerOptions interrupted;
  interrupted.stop_at_step = 5;
  const RunSummary first = train(split, interrupted);
  CHECK_FALSE(first.finished);
  CHECK(last_checkpoint(split).ints.at("step") == 5);
  const std::string resume_from =
      (fs::path(split.train.out) / "checkpoints" / "last_at_5.h5").string();
  fs::copy_file(fs::path(split.train.out) / "checkpoints" / "last.h5", resume_from);
  // A record written after the checkpoint (as by a run killed later) is dropped on resume,
  // and a stale temporary checkpoint is removed.
  std::ofstream(fs::path(split.train.out) / "metrics.jsonl", std::ios::app)
      << "{\"event\": \"train\", \"step\": 99}\n";
  const fs::path stale = fs::path(split.train.out) / "checkpoints" / "last.h5.tmp.4242";
  std::ofstream(stale) << "half a checkpoint";
  TrainerOptions resumed;
  resumed.resume = resume_from;
  const RunSummary second = train(split, resumed);
  CHECK(second.finished);
  CHECK(second.steps == 12);
  CHECK(read_text(fs::path(split.train.out) / "metrics.jsonl").find("\"step\": 99") ==
        std::string::npos);
  CHECK_FALSE(fs::exists(stale));
  // The validations before the interruption count: the best is the straight run's.
  CHECK(second.best_val.count > 0);
  check_same_training_state(last_checkpoint(straight), last_checkpoint(split));
  // Step 5 is inside the record of steps 4-6 (log_every 3): the resumed run's record averages
  // the three updates too, not only step 6 (it did before the open record was saved).
  CHECK(record_losses(split, "train") == record_losses(straight, "train"));
  CHECK(record_losses(straight, "train").size() == 4);
}

// A run resumed from an earlier checkpoint of a finished course drops that course's test records
// (the best weights' one carries the best's step, before the checkpoint's) and its summary.json
// until its own end writes them: they stayed, and a test was recorded twice.
TEST_CASE("trainer: a resume drops the test records and summary of the course it continues") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  std::vector<std::string> overrides = kCommon;
  overrides.push_back("train.save_every=4");
  const RunConfig run = tiny_config(scratch, data, "run", overrides);
  train(run);
  const std::vector<std::string> finished = record_losses(run);
  REQUIRE(record_losses(run, "test").size() == 2);
  const fs::path dir = run.train.out;

  TrainerOptions from_8;
  from_8.resume = (dir / "checkpoints" / "step-00000008.h5").string();
  from_8.stop_at_step = 10;
  CHECK_FALSE(train(run, from_8).finished);
  CHECK(record_losses(run, "test").empty());
  CHECK_FALSE(fs::exists(dir / "summary.json"));

  TrainerOptions to_the_end;
  to_the_end.resume = (dir / "checkpoints" / "last.h5").string();
  CHECK(train(run, to_the_end).finished);
  CHECK(record_losses(run) == finished);
  CHECK(fs::exists(dir / "summary.json"));
}

// tests/train/fixtures/resume_at_5.h5 was written at step 5 of `split` above by the relpos of
// before the model and dataset registries (RELPOS_WRITE_FIXTURES=1 writes it again): a run of
// today resumes from it and ends where an uninterrupted run of today does. Bit for bit where
// this CPU computes the first five steps as the fixture's did; another CPU's BLAS kernels round
// differently, so there the end must agree to rounding drift (1e-4 of the parameters' norm),
// far below what a lost optimizer moment, generator or data position makes (~1e-1).
TEST_CASE("trainer: a checkpoint written by an earlier relpos resumes bit-exactly") {
  const fs::path& fixture = kFixture;
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const std::vector<std::string>& common = kCommon;
  const RunConfig first = tiny_config(scratch, data, "first", common);
  TrainerOptions interrupted;
  interrupted.stop_at_step = 5;
  train(first, interrupted);
  if (std::getenv("RELPOS_WRITE_FIXTURES") != nullptr) {
    fs::create_directories(fixture.parent_path());
    fs::copy_file(fs::path(first.train.out) / "checkpoints" / "last.h5", fixture,
                  fs::copy_options::overwrite_existing);
  }
  REQUIRE(fs::exists(fixture));
  const CheckpointData old = read_checkpoint(fixture.string());
  CHECK(old.ints.at("step") == 5);
  const bool same_arithmetic = relative_distance(old, last_checkpoint(first)) == 0.0;

  const RunConfig straight = tiny_config(scratch, data, "straight", common);
  const RunConfig resumed_run = tiny_config(scratch, data, "resumed", common);
  train(straight);
  TrainerOptions resumed;
  resumed.resume = fixture.string();
  const RunSummary r = train(resumed_run, resumed);
  CHECK(r.finished);
  CHECK(r.steps == 12);
  if (same_arithmetic) {
    check_same_params(last_checkpoint(straight), last_checkpoint(resumed_run));
  } else {
    const double drift = relative_distance(last_checkpoint(straight), last_checkpoint(resumed_run));
    MESSAGE("this CPU rounds the fixture's first five steps differently; drift at the end ", drift);
    CHECK(drift < 1e-4);
  }
}

// The tolerance above tells a lost piece of state from rounding: a resume that forgets the
// optimizer's moments ends far from the uninterrupted run.
TEST_CASE("trainer: a resume without the optimizer's moments is caught by the drift bound") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const std::vector<std::string>& common = kCommon;
  const RunConfig split = tiny_config(scratch, data, "split", common);
  const RunConfig straight = tiny_config(scratch, data, "straight", common);
  TrainerOptions interrupted;
  interrupted.stop_at_step = 5;
  train(split, interrupted);
  train(straight);
  const std::string path = (fs::path(split.train.out) / "checkpoints" / "last.h5").string();
  CheckpointData damaged = read_checkpoint(path);
  for (auto& [name, moments] : damaged.optimizer)
    for (auto& [key, value] : moments) value = zeros_like(value);
  const std::string damaged_path = (scratch.path / "no_moments.h5").string();
  write_checkpoint(damaged_path, damaged);
  const RunConfig resumed_run = tiny_config(scratch, data, "resumed", common);
  TrainerOptions resumed;
  resumed.resume = damaged_path;
  train(resumed_run, resumed);
  CHECK(relative_distance(last_checkpoint(straight), last_checkpoint(resumed_run)) > 1e-3);
}

// Every entry of a checkpoint of today's format, loaded through the training state's one list
// and saved again, comes back with the same name and bits (the configuration text is the run's).
// A checkpoint of an earlier relpos reads the entries it predates as their defaults.
TEST_CASE("training state: every entry of a checkpoint round-trips through load and save") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig config = tiny_config(scratch, data, "state", kCommon);
  TrainerOptions interrupted;
  interrupted.stop_at_step = 5;  // inside the train record of steps 4-6
  train(config, interrupted);
  const std::unique_ptr<Task> task = make_task(config, Device::cpu());
  const auto optimizer = make_optimizer(task->model().named_parameters(), config.optimizer);
  RunPosition position;
  TrainingState state(*task, *optimizer, position, config.yaml);
  state.load(read_checkpoint(kFixture.string()), kFixture.string());
  CHECK(position.step == 5);
  CHECK(position.record_updates == 0);  // the fixture predates the open record's entries
  CHECK(position.record_loss_sum == 0);

  const CheckpointData saved = last_checkpoint(config);
  state.load(saved, "last.h5");
  CHECK(position.step == 5);
  CHECK(position.best_step == saved.ints.at("best_step"));
  CHECK(position.record_updates == 2);
  CHECK(position.record_loss_sum > 0);
  const CheckpointData again = state.save();

  CHECK(again.ints == saved.ints);
  REQUIRE(again.floats.size() == saved.floats.size());
  // best_metric is NaN before a validation. (No structured binding: CAPTURE cannot take one.)
  for (const auto& entry : saved.floats) {
    const std::string& key = entry.first;
    const double& value = entry.second;
    CAPTURE(key);
    REQUIRE(again.floats.count(key) == 1);
    CHECK(std::memcmp(&value, &again.floats.at(key), sizeof(double)) == 0);
  }
  CHECK(again.texts.at("config") == config.yaml);
  CHECK(again.texts.count("relpos_version") == 1);
  check_same_training_state(saved, again);
  const auto check_tensors = [](const auto& a, const auto& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].first);
      CHECK(a[i].first == b[i].first);
      CHECK(same_bits(a[i].second, b[i].second));
    }
  };
  check_tensors(saved.buffers, again.buffers);
  check_tensors(saved.state, again.state);
  REQUIRE(saved.generators.size() == again.generators.size());
  for (size_t i = 0; i < saved.generators.size(); ++i) {
    CHECK(saved.generators[i].first == again.generators[i].first);
    CHECK(saved.generators[i].second.seed() == again.generators[i].second.seed());
    CHECK(saved.generators[i].second.offset() == again.generators[i].second.offset());
  }
  CHECK(saved.counters == again.counters);

  CheckpointData no_step = saved;
  no_step.ints.erase("step");
  CHECK(test::error_of([&] { state.load(no_step, "x.h5"); }) ==
        "[train] 'x.h5' is not a training checkpoint (no 'step')");
}

// config.yaml holds every default, those the model's layers read as it is built included, and
// parses back to itself; a checkpoint of an earlier relpos, whose configuration left the
// defaults out, is compared with what those defaults mean today.
TEST_CASE("trainer: config.yaml holds every default; an older checkpoint is compared by them") {
  const fs::path& fixture = kFixture;
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const std::vector<std::string>& common = kCommon;
  const RunConfig fresh = tiny_config(scratch, data, "fresh", common);
  TrainerOptions short_run;
  short_run.stop_at_step = 1;
  train(fresh, short_run);
  const std::string written = read_text(fs::path(fresh.train.out) / "config.yaml");
  // The trunk's, the attention variant's (read only when the model is built), the schedule's and
  // the trainer's defaults, none of which the tiny config writes.
  for (const char* line : {"attention_dropout: 0.1", "fused: true", "log_every: 3",
                           "max_batches: 0", "type: linear_decay", "num_heads: 2", "norm: pre"})
    CHECK_MESSAGE(written.find(line) != std::string::npos, line << " missing from:\n" << written);
  CHECK(last_checkpoint(fresh).texts.at("config") == written);
  CHECK(parse_config(written, "config.yaml").yaml == written);

  // The fixture's configuration has none of these keys.
  const std::string old_config = read_checkpoint(fixture.string()).texts.at("config");
  CHECK(old_config.find("attention_dropout") == std::string::npos);
  const auto refusal = [&](const std::string& change) {
    std::vector<std::string> extra = common;
    extra.push_back(change);
    TrainerOptions resumed;
    resumed.resume = fixture.string();
    const std::string name = "changed_" + change.substr(0, change.find('='));
    return test::error_of([&] { train(tiny_config(scratch, data, name, extra), resumed); });
  };
  CHECK(refusal("model.attention_dropout=0.05").find("model.attention_dropout: 0.1 -> 0.05") !=
        std::string::npos);
  CHECK(refusal("model.attention.fused=false").find("model.attention.fused: true -> false") !=
        std::string::npos);
}

// A second trainer in a run directory another one holds (a --resume while the run goes on, an
// --overwrite of it) is refused before it removes or writes anything there; both used to go on,
// interleaving their records and checkpoints. The directory is free again once the first ends.
TEST_CASE("trainer: a run directory in use by another trainer is refused, not shared") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig config = tiny_config(scratch, data, "busy", kCommon);
  TrainerOptions interrupted;
  interrupted.stop_at_step = 5;
  interrupted.verbose = false;
  train(config, interrupted);
  const fs::path dir = config.train.out;
  TrainerOptions resumed;
  resumed.resume = (dir / "checkpoints" / "last.h5").string();
  resumed.verbose = false;
  TrainerOptions overwrite;
  overwrite.overwrite = true;
  overwrite.verbose = false;
  const std::string in_use = fmt::format(
      "[train] '{}' is in use: another relpos process is training there (wait for it to end, or "
      "train elsewhere with --out)",
      dir.string());
  {
    Trainer first(config, resumed);
    const std::string metrics = read_text(dir / "metrics.jsonl");
    CHECK(test::error_of([&] { Trainer second(config, overwrite); }) == in_use);
    CHECK(test::error_of([&] { Trainer second(config, resumed); }) == in_use);
    CHECK(read_text(dir / "metrics.jsonl") == metrics);
    CHECK(fs::exists(dir / "config.yaml"));
    CHECK(first.run().finished);
  }
  CHECK(train(config, overwrite).finished);
}

// A checkpoint of the validation where patience stopped the run (as one killed during the test
// that follows leaves) resumes into that test: the resumed run trained on, past the step where
// the uninterrupted run stopped.
TEST_CASE("trainer: a run stopped early by patience resumes into its test, not into more updates") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  std::vector<std::string> overrides = kCommon;
  for (const char* key : {"train.eval_every=1", "train.patience=1"}) overrides.push_back(key);
  const RunConfig run = tiny_config(scratch, data, "patient", overrides);
  const RunSummary stopped = train(run);
  REQUIRE(stopped.stopped_early);
  REQUIRE(stopped.steps < 12);
  const std::vector<std::string> records = record_losses(run);
  const CheckpointData at_stop = last_checkpoint(run);
  TrainerOptions resumed;
  resumed.resume = (fs::path(run.train.out) / "checkpoints" / "last.h5").string();
  const RunSummary again = train(run, resumed);
  CHECK(again.finished);
  CHECK(again.stopped_early);
  CHECK(again.steps == stopped.steps);
  CHECK(again.best_step == stopped.best_step);
  CHECK(record_losses(run) == records);
  check_same_training_state(last_checkpoint(run), at_stop);
}

// checkpoints/best.h5 holds the weights of the best validation the run records. A resume with a
// changed configuration from a step checkpoint before the file's step (or with the file gone)
// cannot keep that true: the file is removed and the best chosen anew. The file of the course the
// resume left stayed, and "test (best)" measured its weights under another step's name.
TEST_CASE("trainer: after a resume, best.h5 holds the weights of the best validation recorded") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  std::vector<std::string> overrides = kCommon;
  for (const char* key : {"train.eval_every=1", "train.save_every=1", "train.metric=loss"})
    overrides.push_back(key);
  const RunConfig run = tiny_config(scratch, data, "best", overrides);
  const RunSummary whole = train(run);
  const fs::path checkpoints = fs::path(run.train.out) / "checkpoints";
  const auto step_of = [](const fs::path& file) {
    return read_checkpoint_attributes(file.string()).ints.at("step");
  };
  REQUIRE(whole.best_step == 12);  // the validation loss falls at every step
  REQUIRE(step_of(checkpoints / "best.h5") == 12);
  // From step 6 on, a learning rate too small to move a parameter's f32 bits: no later
  // validation beats step 6's, whose weights the whole run's best.h5 overwrote.
  std::vector<std::string> frozen = overrides;
  frozen.push_back("optimizer.lr=1e-12");
  const RunConfig changed = tiny_config(scratch, data, "best", frozen);
  TrainerOptions resumed;
  resumed.resume = (checkpoints / "step-00000006.h5").string();
  resumed.allow_config_change = true;
  const RunSummary again = train(changed, resumed);
  CHECK(again.best_step == 7);  // the first validation after the resume
  CHECK(step_of(checkpoints / "best.h5") == 7);
  CHECK(read_text(fs::path(run.train.out) / "log.txt")
            .find("best.h5 holds the weights of step 12, not of the best validation (step 6)") !=
        std::string::npos);

  // A missing best.h5 on a resume of the finished run: its last weights are validated again and
  // are the best.
  fs::remove(checkpoints / "best.h5");
  TrainerOptions finished;
  finished.resume = (checkpoints / "last.h5").string();
  const RunSummary last = train(changed, finished);
  CHECK(last.best_step == 12);
  CHECK(step_of(checkpoints / "best.h5") == 12);
  CHECK(last.test_best.get("loss") == last.test_last.get("loss"));
}

// A best.h5 of a later step is kept on a resume only when the run retraces the course that wrote
// it. Here the file is of another course (a resume with a changed configuration wrote it) while
// the resume itself changes nothing: kept, it would have been tested as the best of step 1.
TEST_CASE(
    "trainer: a later best.h5 of another course is not kept by a resume that changes nothing") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  std::vector<std::string> learning = kCommon;
  for (const char* key : {"train.eval_every=1", "train.save_every=1", "train.metric=loss"})
    learning.push_back(key);
  std::vector<std::string> frozen = learning;
  frozen.push_back("optimizer.lr=1e-12");  // no parameter moves: no validation after the first wins
  const RunConfig still = tiny_config(scratch, data, "courses", frozen);
  const RunConfig moving = tiny_config(scratch, data, "courses", learning);
  const fs::path checkpoints = fs::path(still.train.out) / "checkpoints";
  REQUIRE(train(still).best_step == 1);
  TrainerOptions changed;
  changed.resume = (checkpoints / "step-00000006.h5").string();
  changed.allow_config_change = true;
  REQUIRE(train(moving, changed).best_step == 12);  // its best.h5, of step 12
  TrainerOptions retrace;
  retrace.resume = (checkpoints / "step-00000004.h5").string();
  const RunSummary again = train(still, retrace);
  CHECK(again.best_step == 5);  // chosen anew: the first validation after the resume
  CHECK(read_checkpoint_attributes((checkpoints / "best.h5").string()).ints.at("step") == 5);
}
