// The training loop (train/trainer.h): setting the run up, resuming it, saving it, and
// Trainer::run, the loop of the named steps of Trainer::State (train/trainer_state.h).

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/allocator.h"
#include "core/comm/comm.h"
#include "core/cpu_threads.h"
#include "core/error.h"
#include "core/file_write.h"
#include "core/fnv1a.h"
#include "train/checkpoint.h"
#include "train/clip.h"
#include "train/distributed.h"
#include "train/gradient_reducer.h"
#include "train/json.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/run_log.h"
#include "train/schedule.h"
#include "train/stop_signals.h"
#include "train/task.h"
#include "train/trainer_state.h"
#include "train/training_state.h"

namespace relpos {

void write_text(const fs::path& path, const std::string& text) {
  write_file_atomic("train", path.string(), text);
}

namespace {

// The metrics.jsonl records up to `step` (a resumed run drops what came after its checkpoint,
// so no event is recorded twice); records without a step are kept. Test records go whatever
// their step: a test follows the run's last update, which the resumed run has yet to make (the
// best weights' record carries the step of the best, before the checkpoint's).
void truncate_metrics(const fs::path& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const Json record = Json::parse(line, nullptr, false);
    const auto at = record.is_object() ? record.find("step") : record.end();
    const char* damage = !record.is_object()        ? "a line that is not a JSON object"
                         : at == record.end()       ? nullptr
                         : !at->is_number_integer() ? "a record whose step is not a number"
                                                    : nullptr;
    RELPOS_CHECK(damage == nullptr, "train",
                 "'{}' line {}: {}; the log of this run is damaged (move it away to resume)",
                 path.string(), number, damage);
    if (at != record.end() && (at->get<int64_t>() > step || record.value("event", "") == "test"))
      continue;
    kept += line + "\n";
  }
  in.close();
  write_text(path, kept);
}

// What every rank of a job must have alike: the configuration, the model's parameters (names
// and shapes) and the data of every split.
std::vector<RankAgreement> rank_agreement(const RunConfig& config, Task& task) {
  std::vector<RankAgreement> items;
  Fnv1a yaml;
  yaml.add(config.yaml);
  items.push_back(
      {"the configuration (config.yaml: the same file and --set on every rank)", yaml.value});
  Fnv1a shapes;
  for (const auto& [name, p] : task.model().named_parameters()) {
    shapes.add(name);
    shapes.add(p.value().str());
  }
  items.push_back({"the model's parameters (names and shapes)", shapes.value});
  for (const SplitPrint& split : task.data_prints()) {
    Fnv1a data;
    data.add(&split.items, sizeof split.items);
    data.add(&split.hash, sizeof split.hash);
    items.push_back(
        {fmt::format("the {} split ({} {} on rank 0)", split.split, split.items, task.unit()),
         data.value});
  }
  return items;
}

}  // namespace

Trainer::Trainer(RunConfig config, TrainerOptions options) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.config = std::move(config);
  s.options = std::move(options);
  s.device = job_device(s.config.device, "train");
  s.root = comm::rank() == 0;
  // Everything that can be checked is (the model, the data, the ranks, the directory) before
  // the run directory is touched.
  s.build();
  if (s.options.resume.empty() && !s.config.train.init_from.empty()) s.init_from_checkpoint();
  // (The fingerprints hash every token of every split: none are made for one process.)
  if (comm::distributed()) check_ranks_agree(rank_agreement(s.config, *s.task));
  s.check_run_dir();
  if (!s.options.resume.empty()) s.load_resume();
  const int64_t stop = s.options.stop_at_step;
  RELPOS_CHECK(stop == 0 || (stop > s.position.step && stop <= s.total_steps), "train",
               "--stop-at-step {} is not an update of this session, which goes from step {} to "
               "step {}",
               stop, s.position.step, s.total_steps);
  s.open_run_dir();
  for (const std::string& warning : s.task->model().warnings()) s.log->warn("warning: {}", warning);
  if (!s.initialized.empty())
    s.log->info("initialized {} of {} parameter tensors from {} (train.init_from)",
                s.initialized.size(), s.task->model().named_parameters().size(),
                s.config.train.init_from);
  if (!s.options.resume.empty()) {
    s.note_resume();
    s.check_best_weights();
  } else {
    s.training_state().start();
  }
  broadcast_module(s.task->model());  // every rank starts from rank 0's parameters
  if (s.root)
    s.metrics_file.open(s.dir / "metrics.jsonl",
                        s.position.step > 0 ? std::ios::app : std::ios::trunc);
  set_detect_anomaly(s.config.debug.detect_anomaly || detect_anomaly());
}

Trainer::~Trainer() = default;

Model& Trainer::model() {
  return s_->task->model();
}

RunSummary Trainer::run() {
  try {
    return s_->run();
  } catch (const std::exception& e) {
    // stderr gets the error from the caller; log.txt keeps why the run stopped.
    if (s_->root && s_->log) log_to_file_only(*s_->log, fmt::format("stopped: {}", e.what()));
    throw;
  }
}

RunSummary Trainer::State::run() {
  reset_peak_memory(device);
  log->info("run '{}': {} parameters, {}, {} updates on {}", config.name,
            task->model().num_parameters(), task->describe(), total_steps, config.device);
  if (options.profile_steps > 0) return run_profile();
  Progress progress(total_steps, position.step, config.train.log_every, options.verbose && root);
  LogWindow window(device, position, root);
  std::optional<StopSignals> signals;
  if (options.stop_on_signals) signals.emplace();
  // A checkpoint of the validation that stopped the run early resumes into its test.
  stopped_early = patience_spent();
  if (stopped_early && position.step < total_steps)
    log->info(
        "stopped early at step {} ({} validations without a better {}; train.patience {}): "
        "the test follows",
        position.step, position.evals_without_improvement, metric, config.train.patience);
  bool keep_going = position.step < total_steps && !stopped_early;
  while (keep_going) {
    const Update update = train_step(window);
    keep_going = position.step < total_steps;
    const bool validating = validation_due(update) || !keep_going;  // also at --stop-at-step
    const int signal = signals ? signals->requested() : 0;
    const bool stopping = position.step == options.stop_at_step || signal != 0;
    // The device's loss and finiteness are read where the run records or saves something.
    log_update(update, window, progress, validating || stopping || step_checkpoint_due());
    if (validating) {
      progress.interrupt();
      keep_going = validate() && keep_going;
    }
    save_step_checkpoint();
    if (stopping && keep_going) {  // at the last update or an early stop: after the loop
      progress.interrupt();
      return stop_here(signal);
    }
  }
  progress.interrupt();
  // A signal during the last update or the validation after it, or --stop-at-step at the last
  // update, ends the session before the test, which a --resume of its checkpoint then runs.
  const int signal = signals ? signals->requested() : 0;
  if (signal != 0 || position.step == options.stop_at_step) return stop_here(signal);
  signals.reset();
  // A resume that chose the best anew (check_best_weights) and trains no further validates once.
  if (std::isnan(position.best_metric)) validate();
  return finish();
}

// The files of a run in its directory (a fresh run refuses them, --overwrite removes them).
const char* const kRunFiles[] = {"config.yaml", "log.txt", "metrics.jsonl", "summary.json",
                                 "checkpoints"};

// A fresh run (rank 0) refuses a directory that holds another run unless told to overwrite it,
// and one that holds other files (--overwrite would remove files relpos did not write; a run
// there would mix its files with them). A run's directory is one with its config.yaml.
void Trainer::State::check_run_dir() const {
  if (!root || !options.resume.empty()) return;
  const fs::path out = config.train.out;
  std::error_code ec;
  if (!fs::exists(out / "config.yaml", ec)) {
    RELPOS_CHECK(!fs::is_directory(out, ec) || fs::is_empty(out, ec), "train",
                 "'{}' holds files but no run (no config.yaml): train into a new or empty folder "
                 "(--out)",
                 out.string());
    return;
  }
  RELPOS_CHECK(options.overwrite, "train",
               "'{}' already holds a run (config.yaml is there): continue it with --resume {}, "
               "start it again with --overwrite, or train elsewhere with --out",
               out.string(), (out / "checkpoints" / "last.h5").string());
}

// The run directory (rank 0; locked to this process; --overwrite: without the files of the run
// it held) and the logger.
void Trainer::State::open_run_dir() {
  dir = config.train.out;
  if (!root) {
    log = make_rank_logger();
    return;
  }
  std::error_code made;
  fs::create_directories(dir, made);
  RELPOS_CHECK(!made, "train", "cannot create the run directory '{}': {}", dir.string(),
               made.message());
  dir_lock = std::make_unique<RunDirLock>(dir);  // before anything there is removed or written
  if (options.overwrite && options.resume.empty())
    for (const char* name : kRunFiles) fs::remove_all(dir / name, made);
  fs::create_directories(dir / "checkpoints", made);
  RELPOS_CHECK(!made, "train", "cannot create the run directory '{}': {}", dir.string(),
               made.message());
  // Temporary checkpoints of an interrupted write (checkpoint.h) are never needed again.
  for (const auto& entry : fs::directory_iterator(dir / "checkpoints", made))
    if (entry.path().filename().string().find(".h5.tmp.") != std::string::npos)
      fs::remove(entry.path(), made);
  log = make_run_logger(dir / "log.txt", options.verbose);
  write_text(dir / "config.yaml", config.yaml);
}

// The task (with its model and data), the optimizer, the gradient reducer and the schedule.
void Trainer::State::build() {
  const RunConfig& c = config;
  task = make_task(c, device);
  complete_config(config);  // the attention and positional defaults, read as the model was built
  metric = selection_metric(c, *task);
  Model& model = task->model();
  // model.max_len sizes position tables; a language model with none (Transformer-XL's relative
  // attention, a causal_lm without positions) reads any length and ignored it. A resumed run
  // keeps the configuration it started with.
  const auto* lm = dynamic_cast<const LanguageModel*>(&model);
  RELPOS_CHECK(
      !options.resume.empty() || lm == nullptr || lm->max_keys() > 0 || c.model.max_len == 0,
      "config",
      "model.max_len {} does nothing for this {}: its attention and positions read any "
      "number of keys (no table to size); remove it",
      c.model.max_len, c.model.type);
  optimizer = make_optimizer(model.named_parameters(), c.optimizer);
  reducer = std::make_unique<GradientReducer>(model.parameters());
  // An update sums train.accumulate batches; more than an epoch holds would read the data over
  // and over for one update (10^11 ran for ever).
  RELPOS_CHECK(c.train.accumulate <= task->batches_per_epoch(), "config",
               "train.accumulate {} sums more batches into one update than an epoch has ({} of "
               "data.batch_size {}): lower it or data.batch_size",
               c.train.accumulate, task->batches_per_epoch(), c.data.batch_size);
  const int64_t per_epoch = task->batches_per_epoch() / c.train.accumulate;
  RELPOS_CHECK(
      c.train.steps > 0 || c.train.epochs <= std::numeric_limits<int64_t>::max() / per_epoch,
      "config", "train.epochs {} of {} updates each is more updates than a run counts",
      c.train.epochs, per_epoch);
  total_steps = c.train.steps > 0 ? c.train.steps : c.train.epochs * per_epoch;
  schedule = make_schedule(c.schedule, optimizer->lr(), total_steps);
}

// The training state from options.resume, every check of it passed.
void Trainer::State::load_resume() {
  const CheckpointData saved_state = read_checkpoint(options.resume);
  training_state().load(saved_state, options.resume,
                        [&](const RunPosition& saved, const std::string& saved_config) {
                          task->check_checkpoint(saved_state, options.resume);
                          resume_changes = check_resume(saved, saved_config);
                        });
}

void Trainer::State::note_resume() {
  if (!resume_changes.empty())
    log->warn("note: resuming with a changed configuration: {}", fmt::join(resume_changes, "; "));
  if (root) {
    truncate_metrics(dir / "metrics.jsonl", position.step);
    // The run is not finished until its new end writes the summary again.
    std::error_code error;
    fs::remove(dir / "summary.json", error);
    RELPOS_CHECK(!error, "train", "cannot remove the finished run's '{}': {}",
                 (dir / "summary.json").string(), error.message());
  }
  log->info("resumed from {} at step {} of {}", options.resume, position.step, total_steps);
}

// A checkpoint whose open train record its step cannot hold, of another configuration, or past
// this run's end, is refused; the changes --allow-config-change lets through are returned.
std::vector<std::string> Trainer::State::check_resume(const RunPosition& saved,
                                                      const std::string& saved_config) const {
  RELPOS_CHECK(saved.record_updates <= saved.step && std::isfinite(saved.record_loss_sum),
               "checkpoint",
               "'{}': a train record of {} updates with loss sum {} cannot be open at step {}",
               options.resume, saved.record_updates, saved.record_loss_sum, saved.step);
  std::vector<std::string> changes;
  if (!saved_config.empty() && saved_config != config.yaml) {
    changes = trajectory_changes(saved_config, config.yaml, config.defaults);
    RELPOS_CHECK(changes.empty() || options.allow_config_change, "train",
                 "'{}' was trained with another configuration ({}); resuming would change the "
                 "run's course: pass --allow-config-change to continue anyway",
                 options.resume, fmt::join(changes, "; "));
  }
  RELPOS_CHECK(saved.step <= total_steps, "train", "'{}' is at step {}, past this run's {} steps",
               options.resume, saved.step, total_steps);
  return changes;
}

}  // namespace relpos
