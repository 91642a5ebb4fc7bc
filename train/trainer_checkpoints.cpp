// Trainer::State's checkpoints (train/trainer_state.h): saving the training state, the step
// checkpoints of train.save_every with train.keep_last, best.h5 kept true on a resume, and a
// fine-tuning run's start from train.init_from.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/comm/comm.h"
#include "core/error.h"
#include "core/ops.h"
#include "train/checkpoint.h"
#include "train/init_from.h"
#include "train/trainer_state.h"
#include "train/training_state.h"

namespace relpos {

namespace {

constexpr const char* kStepPrefix = "step-";

// The step of a step checkpoint's file name ("step-00000100.h5"), or -1 for any other file.
int64_t step_of(const std::string& filename) {
  static const std::regex kStepFile(std::string(kStepPrefix) + "([0-9]{1,18})\\.h5");
  std::smatch match;
  return std::regex_match(filename, match, kStepFile) ? std::stoll(match[1].str()) : -1;
}

}  // namespace

// Every rank takes part (the task's state and the random streams are gathered from all of
// them); rank 0 writes.
void Trainer::State::save(const fs::path& path) {
  const Clock::time_point now = Clock::now();
  position.wall_time_s += std::chrono::duration<double>(now - started).count();
  started = now;
  const CheckpointData data = training_state().save();
  if (root) write_checkpoint(path.string(), data);
}

// Every train.save_every updates: checkpoints/step-<step>.h5, then the older ones beyond
// train.keep_last removed.
void Trainer::State::save_step_checkpoint() {
  if (!step_checkpoint_due()) return;
  save(dir / "checkpoints" / fmt::format("{}{:08d}.h5", kStepPrefix, position.step));
  if (root && config.train.keep_last > 0) prune_step_checkpoints();
}

// Keeps the newest train.keep_last step checkpoints up to this step. Those of later steps (left
// by the session a resumed run continues) are not touched: the run writes them again as it
// reaches their steps.
void Trainer::State::prune_step_checkpoints() const {
  std::vector<std::pair<int64_t, fs::path>> older;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "checkpoints", ec)) {
    const int64_t step = step_of(entry.path().filename().string());
    if (step >= 0 && step <= position.step) older.emplace_back(step, entry.path());
  }
  RELPOS_CHECK(!ec, "train", "cannot list '{}': {}", (dir / "checkpoints").string(), ec.message());
  std::sort(older.begin(), older.end());
  const auto keep = static_cast<size_t>(config.train.keep_last);
  for (size_t i = 0; i + keep < older.size(); ++i) {
    fs::remove(older[i].second, ec);
    RELPOS_CHECK(!ec, "train", "cannot remove the old checkpoint '{}': {}",
                 older[i].second.string(), ec.message());
  }
}

namespace {

// What checkpoints/best.h5 is: its step (-1: no file) and the configuration that wrote it, or
// why it cannot be read.
struct BestFile {
  int64_t step = -1;
  std::string config, unreadable;
};

BestFile read_best_file(const fs::path& path) {
  BestFile best;
  std::error_code error;
  if (!fs::exists(path, error)) return best;
  try {
    const CheckpointData attributes = read_checkpoint_attributes(path.string());
    const auto step = attributes.ints.find("step");
    const auto config = attributes.texts.find("config");
    if (step == attributes.ints.end() || config == attributes.texts.end())
      best.unreadable = "it has no 'step' or 'config' attribute";
    else
      std::tie(best.step, best.config) = std::tie(step->second, config->second);
  } catch (const Error& e) {
    best.unreadable = e.what();
  }
  return best;
}

}  // namespace

// checkpoints/best.h5 holds the weights of position.best_step. A resume keeps that true: a file
// of a later step is kept only where the run retraces the course that wrote it (neither the
// checkpoint's configuration nor the file's changes the course: the run writes the same file
// again at that step). Where the best's weights are gone (the file holds another step, is
// missing or unreadable) or the validation is computed differently from here on (an eval.*
// change), the file is removed and the best is chosen anew from the validations to come
// (patience keeps its count); otherwise the test of "the best weights" would measure other
// weights than those of the best it names. Every rank takes part (rank 0 reads the file).
void Trainer::State::check_best_weights() {
  const fs::path path = dir / "checkpoints" / "best.h5";
  const RunPosition& p = position;
  std::string why;  // why the best is chosen anew; empty: best.h5 stays
  if (root) {
    const BestFile best = read_best_file(path);
    const bool eval_changed =
        std::any_of(resume_changes.begin(), resume_changes.end(),
                    [](const std::string& change) { return change.rfind("eval.", 0) == 0; });
    if (eval_changed)
      why = "the validation is computed differently from here (eval.*)";
    else if (!best.unreadable.empty())
      why = fmt::format("{} cannot be read ({})", path.string(), best.unreadable);
    else if (best.step > p.step && resume_changes.empty() &&
             trajectory_changes(best.config, config.yaml, config.defaults).empty())
      why = "";  // the retraced course writes it again at its step
    else if (best.step >= 0 && best.step != p.best_step)
      why = fmt::format("{} holds the weights of step {}, not of the best validation (step {})",
                        path.string(), best.step, p.best_step);
    else if (best.step < 0 && p.best_step > 0)
      why = fmt::format("{} is missing (the best validation was at step {})", path.string(),
                        p.best_step);
  }
  Tensor anew = full({1}, why.empty() ? 0.0 : 1.0, DType::f64);
  comm::broadcast(anew, 0);
  if (anew.data<double>()[0] == 0) return;
  if (root) {
    std::error_code error;
    fs::remove(path, error);
    RELPOS_CHECK(!error, "train", "cannot remove '{}': {}", path.string(), error.message());
    log->warn("warning: {}: the best weights are chosen anew from the validations of this session",
              why);
  }
  position.best_step = 0;
  position.best_metric = std::numeric_limits<double>::quiet_NaN();
  position.best_val = {};
}

// A fresh run's parameters chosen by train.init_params from train.init_from (fine-tuning); a
// language model's checkpoint must have been trained on this vocabulary.
void Trainer::State::init_from_checkpoint() {
  const TrainConfig& t = config.train;
  const CheckpointData data = read_checkpoint(t.init_from);
  task->check_checkpoint(data, t.init_from);
  initialized = init_parameters(task->model(), data, t.init_params, t.init_from);
}

}  // namespace relpos
