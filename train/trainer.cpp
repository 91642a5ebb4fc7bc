// The training loop (train/trainer.h).
#include "train/trainer.h"

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
#include "train/checkpoint.h"
#include "train/clip.h"
#include "train/distributed.h"
#include "train/gradient_reducer.h"
#include "train/json.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/run_log.h"
#include "train/schedule.h"
#include "train/task.h"
#include "train/training_state.h"

namespace relpos {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The run's schedule mapping ({type: constant} when absent); schedules that decay over the run
// get its length as total_steps unless the mapping sets one.
Options run_schedule_options(const RunConfig& config, int64_t total_steps) {
  if (config.schedule.empty()) return Options("schedule").set("type", "constant");
  const auto type = config.schedule.get<std::string>("type", "");
  if ((type == "linear_decay" || type == "cosine") && !config.schedule.has("total_steps"))
    return config.schedule.with("total_steps", std::to_string(total_steps));
  return config.schedule;
}

struct Trainer::State {
  RunConfig config;
  TrainerOptions options;
  Device device = Device::cpu();
  bool root = true;  // rank 0: owns the run directory, the log and the checkpoints
  fs::path dir;
  std::shared_ptr<spdlog::logger> log;
  std::ofstream metrics_file;

  std::unique_ptr<Task> task;
  std::string metric;  // selects the best checkpoint
  std::shared_ptr<Optimizer> optimizer;
  std::unique_ptr<GradientReducer> reducer;  // sums gradients over the ranks (data parallel)
  std::shared_ptr<Schedule> schedule;

  // Position: updates done, the epoch being read and the batches of it already consumed.
  int64_t step = 0, epoch = 0, batch_in_epoch = 0, total_steps = 0;
  int64_t evals_without_improvement = 0;
  double best_metric = std::numeric_limits<double>::quiet_NaN();
  int64_t best_step = 0;
  double previous_wall_s = 0, train_time_s = 0;
  bool stopped_early = false;
  Metrics best_val, last_val;
  Clock::time_point started = Clock::now();

  void record(const JsonObject& event) {
    if (!root) return;
    metrics_file << event.str() << '\n';
    metrics_file.flush();
    RELPOS_CHECK(metrics_file.good(), "train", "cannot write '{}': {}",
                 (dir / "metrics.jsonl").string(), std::strerror(errno));
  }
  double wall_s() const {
    return previous_wall_s + std::chrono::duration<double>(Clock::now() - started).count();
  }
};

namespace {

// Writes `text` to `path`, checking every step: a full disk stops the run with the path.
void write_text(const fs::path& path, const std::string& text) {
  write_file_atomic("train", path.string(), text);
}

// The metrics.jsonl records up to `step` (a resumed run drops what came after its checkpoint,
// so no event is recorded twice); records without a step are kept.
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
    if (at != record.end() && at->get<int64_t>() > step) continue;
    kept += line + "\n";
  }
  in.close();
  write_text(path, kept);
}

// Metrics under "<prefix>.<name>" (floats) and "<prefix>.count" (int) of a checkpoint.
void save_metrics(CheckpointData& data, const std::string& prefix, const Metrics& m) {
  for (const auto& [name, value] : m.values) data.floats[prefix + "." + name] = value;
  data.ints[prefix + ".count"] = m.count;
}
// The task's metrics in evaluate()'s order (the loss first).
Metrics load_metrics(const CheckpointData& data, const std::string& prefix, const Task& task) {
  Metrics m;
  m.unit = task.unit();
  std::vector<std::string> names = task.metric_names();
  std::stable_partition(names.begin(), names.end(), [](const auto& n) { return n == "loss"; });
  for (const std::string& name : names) {
    const auto it = data.floats.find(prefix + "." + name);
    m.values.emplace_back(name, it != data.floats.end() ? it->second : 0.0);
  }
  const auto count = data.ints.find(prefix + ".count");
  m.count = count != data.ints.end() ? count->second : 0;
  return m;
}

}  // namespace

Trainer::Trainer(RunConfig config, TrainerOptions options) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.config = std::move(config);
  s.options = std::move(options);
  const RunConfig& c = s.config;
  s.device = job_device(c.device, "train");
  s.root = comm::rank() == 0;

  s.dir = c.train.out;
  if (s.root) {
    std::error_code made;
    fs::create_directories(s.dir / "checkpoints", made);
    RELPOS_CHECK(!made, "train", "cannot create the run directory '{}': {}", s.dir.string(),
                 made.message());
    // Temporary checkpoints of an interrupted write (checkpoint.h) are never needed again.
    for (const auto& entry : fs::directory_iterator(s.dir / "checkpoints", made))
      if (entry.path().filename().string().find(".h5.tmp.") != std::string::npos)
        fs::remove(entry.path(), made);
    s.log = make_run_logger(s.dir / "log.txt", s.options.verbose);
    write_text(s.dir / "config.yaml", c.yaml);
  } else {
    s.log = make_rank_logger();
  }

  s.task = make_task(c, s.device);
  s.metric = selection_metric(c, *s.task);
  Model& model = s.task->model();
  for (const std::string& warning : model.warnings()) s.log->warn("warning: {}", warning);
  s.optimizer = make_optimizer(model.parameters(), c.optimizer);
  s.reducer = std::make_unique<GradientReducer>(model.parameters());

  const int64_t per_epoch = std::max<int64_t>(1, s.task->batches_per_epoch() / c.train.accumulate);
  s.total_steps = c.train.steps > 0 ? c.train.steps : c.train.epochs * per_epoch;
  s.schedule = make_schedule(run_schedule_options(c, s.total_steps), s.optimizer->lr());

  if (!s.options.resume.empty()) {
    const CheckpointData ckpt = read_checkpoint(s.options.resume);
    restore_module(model, ckpt);
    restore_optimizer(*s.optimizer, model, ckpt);
    auto get = [&](const char* key) {
      auto it = ckpt.ints.find(key);
      RELPOS_CHECK(it != ckpt.ints.end(), "train", "'{}' is not a training checkpoint (no '{}')",
                   s.options.resume, key);
      return it->second;
    };
    s.step = get("step");
    s.epoch = get("epoch");
    s.batch_in_epoch = get("batch_in_epoch");
    s.evals_without_improvement = get("evals_without_improvement");
    s.best_step = get("best_step");
    s.best_metric = ckpt.floats.count("best_metric") ? ckpt.floats.at("best_metric")
                                                     : std::numeric_limits<double>::quiet_NaN();
    s.previous_wall_s = ckpt.floats.count("wall_time_s") ? ckpt.floats.at("wall_time_s") : 0.0;
    s.train_time_s = ckpt.floats.count("train_time_s") ? ckpt.floats.at("train_time_s") : 0.0;
    if (ckpt.texts.count("config") && ckpt.texts.at("config") != c.yaml) {
      const std::vector<std::string> changes = trajectory_changes(ckpt.texts.at("config"), c.yaml);
      RELPOS_CHECK(changes.empty() || s.options.allow_config_change, "train",
                   "'{}' was trained with another configuration ({}); resuming would change the "
                   "run's course: pass --allow-config-change to continue anyway",
                   s.options.resume, fmt::join(changes, "; "));
      if (!changes.empty())
        s.log->warn("note: resuming with a changed configuration: {}", fmt::join(changes, "; "));
    }
    RELPOS_CHECK(s.step <= s.total_steps, "train", "'{}' is at step {}, past this run's {} steps",
                 s.options.resume, s.step, s.total_steps);
    // Position the training stream where the run stood, then its carried state (LM memory).
    s.task->seek(s.epoch, s.batch_in_epoch);
    s.task->restore_state(ckpt);
    restore_generator_states(model, ckpt);
    s.best_val = load_metrics(ckpt, "val_best", *s.task);
    s.last_val = load_metrics(ckpt, "val_last", *s.task);
    if (s.root) truncate_metrics(s.dir / "metrics.jsonl", s.step);
  } else {
    s.task->seek(0, 0);
    seed_generators_per_rank(model);
  }
  broadcast_module(model);  // every rank starts from rank 0's parameters
  if (s.root)
    s.metrics_file.open(s.dir / "metrics.jsonl", s.step > 0 ? std::ios::app : std::ios::trunc);
  set_detect_anomaly(c.debug.detect_anomaly || detect_anomaly());
}

Trainer::~Trainer() = default;

Model& Trainer::model() {
  return s_->task->model();
}

RunSummary Trainer::run() {
  State& s = *s_;
  const RunConfig& c = s.config;
  const TrainConfig& t = c.train;
  reset_peak_memory(s.device);

  Model& model = s.task->model();
  // Every rank takes part (the task's state and the random streams are gathered from all of
  // them); rank 0 writes.
  auto save = [&](const fs::path& path) {
    CheckpointData data = capture_state(model, s.optimizer.get());
    s.task->save_state(data);
    gather_generator_states(model, data);
    data.ints = {{"step", s.step},
                 {"epoch", s.epoch},
                 {"batch_in_epoch", s.batch_in_epoch},
                 {"evals_without_improvement", s.evals_without_improvement},
                 {"best_step", s.best_step}};
    data.floats = {{"best_metric", s.best_metric},
                   {"wall_time_s", s.wall_s()},
                   {"train_time_s", s.train_time_s}};
    data.texts = {{"config", c.yaml}, {"relpos_version", RELPOS_VERSION}};
    save_metrics(data, "val_best", s.best_val);
    save_metrics(data, "val_last", s.last_val);
    if (s.root) write_checkpoint(path.string(), data);
  };

  s.log->info("run '{}': {} parameters, {}, {} updates on {}", c.name, model.num_parameters(),
              s.task->describe(), s.total_steps, c.device);

  // Validation, checkpoints, patience; returns false when the run should stop.
  auto validate = [&]() {
    Metrics e;
    try {
      e = s.task->evaluate("val", c.eval.max_batches);
    } catch (const Error& error) {
      throw Error(fmt::format("[train] validation at step {}: {}", s.step, error.what()));
    }
    RELPOS_CHECK(std::isfinite(e.get("loss")), "train",
                 "validation at step {}: the val loss is {}; the model diverged (rerun with "
                 "debug.detect_anomaly: true to name the op)",
                 s.step, e.get("loss"));
    s.last_val = e;
    const double value = e.get(s.metric);
    const bool improved =
        std::isnan(s.best_metric) || metric_improves(s.metric, value, s.best_metric);
    if (improved) {
      s.best_metric = value;
      s.best_step = s.step;
      s.best_val = e;
      s.evals_without_improvement = 0;
    } else {
      ++s.evals_without_improvement;
    }
    s.record(metrics_json(e)
                 .add("event", "eval")
                 .add("split", "val")
                 .add("step", s.step)
                 .add("best", improved));
    s.log->info("step {}: val {}{}", s.step, describe_metrics(e), improved ? " (best)" : "");
    if (improved) save(s.dir / "checkpoints" / "best.h5");
    save(s.dir / "checkpoints" / "last.h5");
    const bool stop = t.patience > 0 && s.evals_without_improvement >= t.patience;
    if (stop) {
      s.stopped_early = true;
      s.log->info("early stop: {} validations without a better {}", s.evals_without_improvement,
                  s.metric);
    }
    return !stop;
  };

  const double max_norm =
      t.clip_grad_norm > 0 ? t.clip_grad_norm : std::numeric_limits<double>::infinity();
  Progress progress(s.total_steps, s.step, t.log_every, s.options.verbose && s.root);
  double loss_window = 0, comm_window_s = 0;
  int64_t window_updates = 0, window_examples = 0;
  auto window_start = Clock::now();
  bool keep_going = s.step < s.total_steps;
  while (keep_going) {
    fit_threads_to_free_cores();  // fewer threads while other processes hold cores
    const auto step_start = Clock::now();
    bool epoch_ended = false;
    double loss_sum = 0;
    for (int64_t a = 0; a < t.accumulate; ++a) {
      if (s.batch_in_epoch == s.task->batches_per_epoch()) {
        ++s.epoch;
        s.batch_in_epoch = 0;
        s.task->seek(s.epoch, 0);
      }
      ++s.batch_in_epoch;
      epoch_ended = epoch_ended || s.batch_in_epoch == s.task->batches_per_epoch();
      try {
        // The last backward before an update reports each finished gradient, and its sum over
        // the ranks starts while backward goes on (data parallel; nothing in a job of one).
        const auto armed = a + 1 == t.accumulate ? s.reducer->arm() : nullptr;
        const TrainLoss batch = s.task->next_loss();
        Var loss = batch.loss;
        const GlobalLoss global =
            global_loss(loss.defined() ? loss.value().to(Device::cpu()).item() : 0.0, batch.count);
        const double value = global.mean;
        window_examples += global.count;
        if (!std::isfinite(value))
          fail<StepError>("train",
                          "the loss is {} at step {}; rerun with debug.detect_anomaly: true (or "
                          "RELPOS_DETECT_ANOMALY=1) to name the op that produced it",
                          value, s.step + 1);
        loss_sum += value;
        if (loss.defined()) {
          if (global.share != 1) loss = loss * global.share;
          if (t.accumulate > 1) loss = loss * (1.0 / static_cast<double>(t.accumulate));
          loss.backward();
        }
      } catch (const StepError&) {
        throw;
      } catch (const Error& e) {
        fail<StepError>("train", "step {} (epoch {}): {}", s.step + 1, s.epoch, e.what());
      }
    }
    s.reducer->finish();  // every rank now holds the gradients of the global batch
    comm_window_s += s.reducer->exposed_seconds();
    const double grad_norm = clip_grad_norm(s.optimizer->params(), max_norm);
    RELPOS_CHECK(std::isfinite(grad_norm), "train",
                 "the gradient norm is {} at step {}; rerun with debug.detect_anomaly: true to "
                 "name the op",
                 grad_norm, s.step + 1);
    const double lr = s.schedule->lr_at(s.step);
    s.optimizer->set_lr(lr);
    s.optimizer->step();
    s.optimizer->zero_grad();
    ++s.step;
    s.train_time_s += std::chrono::duration<double>(Clock::now() - step_start).count();

    const double loss = loss_sum / static_cast<double>(t.accumulate);
    loss_window += loss;
    ++window_updates;
    progress.update(s.step, loss, lr);
    if (s.step % t.log_every == 0 || s.step == s.total_steps) {
      const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
      JsonObject record;
      record.add("event", "train")
          .add("step", s.step)
          .add("epoch", s.epoch)
          .add("loss", loss_window / static_cast<double>(window_updates))
          .add("lr", lr)
          .add("grad_norm", grad_norm)
          .add(s.task->unit() + "_per_s", static_cast<double>(window_examples) / seconds)
          .add("step_s", seconds / static_cast<double>(window_updates));
      // Data parallel: the seconds per update rank 0 waited for the gradient all-reduce after
      // backward ended (the part communication did not overlap).
      if (comm::distributed())
        record.add("comm_s", comm_window_s / static_cast<double>(window_updates));
      s.record(record.add("elapsed_s", s.wall_s()));
      loss_window = comm_window_s = 0;
      window_updates = window_examples = 0;
      window_start = Clock::now();
    }
    keep_going = s.step < s.total_steps;
    if (keep_going && s.step == s.options.stop_at_step) {
      progress.interrupt();
      save(s.dir / "checkpoints" / "last.h5");
      s.log->info("stopped at step {} as asked; continue with --resume {}", s.step,
                  (s.dir / "checkpoints" / "last.h5").string());
      RunSummary partial;
      partial.steps = s.step;
      partial.run_dir = s.dir.string();
      partial.primary = s.root;
      return partial;
    }
    const bool eval_now = t.eval_every > 0 ? s.step % t.eval_every == 0 : epoch_ended;
    if (eval_now || !keep_going) {
      progress.interrupt();
      keep_going = validate() && keep_going;
    }
  }
  progress.interrupt();

  RunSummary r;
  r.finished = true;
  r.steps = s.step;
  r.epochs = static_cast<double>(s.step * t.accumulate) /
             static_cast<double>(std::max<int64_t>(1, s.task->batches_per_epoch()));
  r.stopped_early = s.stopped_early;
  r.best_step = s.best_step;
  r.best_val = s.best_val;
  r.last_val = s.last_val;
  r.metric = s.metric;
  r.test_last = s.task->evaluate("test", 0);
  // Rank 0 reads the best weights it wrote and hands them to the others; when the best is the
  // last update, they are the weights just tested.
  const fs::path best = s.dir / "checkpoints" / "best.h5";
  Tensor has_best = full({1}, s.root && fs::exists(best) ? 1.0 : 0.0, DType::f64);
  comm::broadcast(has_best, 0);
  if (has_best.data<double>()[0] != 0 && s.best_step != s.step) {
    if (s.root) restore_module(model, read_checkpoint(best.string()));
    broadcast_module(model);
    r.test_best = s.task->evaluate("test", 0);
  } else {
    r.test_best = r.test_last;
  }
  r.wall_time_s = s.wall_s();
  r.train_time_s = s.train_time_s;
  r.peak_memory_bytes = memory_stats(s.device).peak_bytes;
  r.parameters = model.num_parameters();
  r.run_dir = s.dir.string();
  r.primary = s.root;
  s.record(
      metrics_json(r.test_last).add("event", "test").add("weights", "last").add("step", r.steps));
  s.record(metrics_json(r.test_best)
               .add("event", "test")
               .add("weights", "best")
               .add("step", r.best_step));

  const std::string summary = JsonObject()
                                  .add("name", c.name)
                                  .add("device", c.device)
                                  .add("steps", r.steps)
                                  .add("epochs", r.epochs)
                                  .add("stopped_early", r.stopped_early)
                                  .add("best_step", r.best_step)
                                  .add("metric", s.metric)
                                  .add("val_best", metrics_json(r.best_val))
                                  .add("val_last", metrics_json(r.last_val))
                                  .add("test_last", metrics_json(r.test_last))
                                  .add("test_best", metrics_json(r.test_best))
                                  .add("wall_time_s", r.wall_time_s)
                                  .add("train_time_s", r.train_time_s)
                                  .add("peak_memory_bytes", r.peak_memory_bytes)
                                  .add("parameters", r.parameters)
                                  .str();
  if (s.root) write_text(s.dir / "summary.json", summary + "\n");
  s.log->info("done: test {} (last), {} (best, step {}), {:.1f} s, peak {:.1f} MB -> {}",
              describe_metrics(r.test_last), describe_metrics(r.test_best), r.best_step,
              r.wall_time_s, static_cast<double>(r.peak_memory_bytes) / 1e6, r.run_dir);
  return r;
}

}  // namespace relpos
