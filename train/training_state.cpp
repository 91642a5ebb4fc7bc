// TrainingState (training_state.h): the one list of the training state, and the two walks over
// it, Saver (state -> CheckpointData) and Loader (CheckpointData -> state).
#include "train/training_state.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "core/error.h"
#include "train/checkpoint_contents.h"
#include "train/distributed.h"

namespace relpos {

namespace {

// Writes each entry of the list into `data`.
struct Saver {
  CheckpointData& data;

  void module(Module& model, Optimizer& optimizer) {
    assert(data.params.empty());  // the list's first entry
    data = capture_state(model, &optimizer);
  }
  void integer(const char* key, int64_t value) { data.ints[key] = value; }
  void optional_integer(const char* key, int64_t value) { data.ints[key] = value; }
  void real(const char* key, double value) { data.floats[key] = value; }
  void text(const char* key, const std::string& value) { data.texts[key] = value; }
  // Metrics under "<prefix>.<name>" (floats) and "<prefix>.count" (int).
  void metrics(const std::string& prefix, const Metrics& m) {
    for (const auto& [name, value] : m.values) data.floats[prefix + "." + name] = value;
    data.ints[prefix + ".count"] = m.count;
  }
  void check(const RunPosition&, const std::string&) {}
  void task_state(Task& task, const RunPosition&) { task.save_state(data); }
  void rank_generators(Module& model) { gather_generator_states(model, data); }
};

// Sets each entry of the list from `data`; optional entries absent from it keep their value.
struct Loader {
  const CheckpointData& data;
  const std::string& source;
  const Task& task;
  const ResumeCheck& on_read;

  void module(Module& model, Optimizer& optimizer) {
    naming_origin(source, [&] {
      restore_module(model, data);
      restore_optimizer(optimizer, model, data);
    });
  }
  void integer(const char* key, int64_t& value) {
    const std::optional<int64_t> saved = position_counter(data, source, key);
    RELPOS_CHECK(saved.has_value(), "train", "'{}' is not a training checkpoint (no '{}')", source,
                 key);
    value = *saved;
  }
  // Absent from checkpoints of older relpos versions: 0 then.
  void optional_integer(const char* key, int64_t& value) {
    value = position_counter(data, source, key).value_or(0);
  }
  void real(const char* key, double& value) {
    const auto it = data.floats.find(key);
    if (it != data.floats.end()) value = it->second;
  }
  void text(const char* key, std::string& value) {
    const auto it = data.texts.find(key);
    value = it != data.texts.end() ? it->second : "";
  }
  // The task's metrics the checkpoint has, in evaluate()'s order (the loss first); none before
  // the run's first validation.
  void metrics(const std::string& prefix, Metrics& m) {
    m = Metrics();
    m.unit = task.unit();
    std::vector<std::string> names = task.metric_names();
    std::stable_partition(names.begin(), names.end(), [](const auto& n) { return n == "loss"; });
    for (const std::string& name : names) {
      const auto it = data.floats.find(prefix + "." + name);
      if (it != data.floats.end()) m.values.emplace_back(name, it->second);
    }
    const auto count = data.ints.find(prefix + ".count");
    m.count = count != data.ints.end() ? count->second : 0;
  }
  void check(const RunPosition& position, const std::string& config) {
    if (on_read) on_read(position, config);
  }
  // The training stream positioned where the run stood, then its carried state (LM memory).
  void task_state(Task& t, const RunPosition& position) {
    t.seek(position.epoch, position.batch_in_epoch);
    t.restore_state(data);
  }
  void rank_generators(Module& model) { restore_generator_states(model, data); }
};

}  // namespace

TrainingState::TrainingState(Task& task, Optimizer& optimizer, RunPosition& position,
                             std::string config)
    : task_(task), optimizer_(optimizer), position_(position), config_(std::move(config)) {}

// The one list: every part of the training state, in the order a load restores it. Checkpoint
// names: the module and optimizer under /params, /buffers, /rng, /counters and /optimizer; the
// position as root attributes; the task's state and each rank's generators under /state.
template <typename Io>
void TrainingState::visit(Io& io) {
  Model& model = task_.model();
  RunPosition& p = position_;
  io.module(model, optimizer_);  // generators here are rank 0's
  io.integer("step", p.step);
  io.integer("epoch", p.epoch);
  io.integer("batch_in_epoch", p.batch_in_epoch);
  io.integer("evals_without_improvement", p.evals_without_improvement);
  io.integer("best_step", p.best_step);
  io.real("best_metric", p.best_metric);
  io.real("wall_time_s", p.wall_time_s);
  io.real("train_time_s", p.train_time_s);
  io.optional_integer("record_updates", p.record_updates);
  io.real("record_loss_sum", p.record_loss_sum);
  io.metrics("val_best", p.best_val);
  io.metrics("val_last", p.last_val);
  std::string config = config_;          // loaded: the checkpoint's, for the check
  std::string version = RELPOS_VERSION;  // the relpos that wrote it; not used on load
  io.text("config", config);
  io.text("relpos_version", version);
  io.check(p, config);
  io.task_state(task_, p);    // "memory.<name>", "vocabulary" (language models)
  io.rank_generators(model);  // "rng_ranks.<name>" (data parallel)
}

void TrainingState::start() {
  task_.seek(0, 0);
  seed_generators_per_rank(task_.model());
}

CheckpointData TrainingState::save() {
  CheckpointData data;
  Saver saver{data};
  visit(saver);
  return data;
}

void TrainingState::load(const CheckpointData& data, const std::string& source,
                         const ResumeCheck& check) {
  position_ = RunPosition();
  Loader loader{data, source, task_, check};
  visit(loader);
}

}  // namespace relpos
