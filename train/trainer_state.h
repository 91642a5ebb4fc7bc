// Trainer::State (train/trainer.h): the run being trained, whose methods are the named steps of
// Trainer::run. Private to the trainer's files: trainer.cpp (setting up, resuming, saving),
// trainer_step.cpp (an update, its log record, validation), trainer_finish.cpp (the end).
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "train/device_window.h"
#include "train/gradient_reducer.h"
#include "train/json.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/run_dir_lock.h"
#include "train/schedule.h"
#include "train/task.h"
#include "train/trainer.h"
#include "train/training_state.h"

namespace relpos {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// What one update did, for the log and the decision to validate (its loss and gradient norm stay
// on the device, in the LogWindow).
struct Update {
  double lr = 0;
  bool epoch_ended = false;
};

// The updates since the last train record of metrics.jsonl.
struct LogWindow {
  // A resumed run's window carries on the record its checkpoint was gathering (rank 0 holds the
  // loss sum of every rank's).
  LogWindow(Device device, const RunPosition& position, bool root)
      : on_device(device), carried_updates(position.record_updates) {
    if (root && position.record_updates > 0) on_device.carry_loss(position.record_loss_sum);
  }
  DeviceWindow on_device;  // their loss sum and finiteness, read where something is recorded
  double comm_s = 0;       // summed over the window's updates
  int64_t updates = 0, examples = 0;  // in this session (rates)
  int64_t carried_updates = 0;        // the record's updates before the resume (its mean loss)
  // Values the updates read back to the host (Tensor::item or to_vector) and, on a GPU,
  // device-to-host copies: 0 in a steady state (transfers.h).
  int64_t host_reads = 0;
  Clock::time_point start = Clock::now();

  // A train record was written: the next window starts.
  void restart() {
    on_device.reset_loss();
    comm_s = 0;
    updates = examples = host_reads = carried_updates = 0;
    start = Clock::now();
  }
};

// Writes `text` to `path` atomically, checking every step: a full disk stops the run with the
// path.
void write_text(const fs::path& path, const std::string& text);

// The run being trained; the steps of Trainer::run are its methods.
struct Trainer::State {
  RunConfig config;
  TrainerOptions options;
  Device device = Device::cpu();
  bool root = true;  // rank 0: owns the run directory, the log and the checkpoints
  fs::path dir;
  std::unique_ptr<RunDirLock> dir_lock;  // rank 0, from open_run_dir on
  std::shared_ptr<spdlog::logger> log;
  std::ofstream metrics_file;

  std::unique_ptr<Task> task;
  std::string metric;  // selects the best checkpoint
  std::shared_ptr<Optimizer> optimizer;
  std::unique_ptr<GradientReducer> reducer;  // sums gradients over the ranks (data parallel)
  std::shared_ptr<Schedule> schedule;
  int64_t total_steps = 0;

  // With the task's model and state and the optimizer: the training state (training_state.h).
  RunPosition position;
  bool stopped_early = false;
  Clock::time_point started = Clock::now();  // since when wall time is not in `position`
  std::vector<std::string> initialized;      // the parameters train.init_from set
  std::vector<std::string> resume_changes;   // of the configuration, allowed on --resume

  TrainingState training_state() { return TrainingState(*task, *optimizer, position, config.yaml); }
  void record(const JsonObject& event) {
    if (!root) return;
    metrics_file << event.str() << '\n';
    metrics_file.flush();
    RELPOS_CHECK(metrics_file.good(), "train", "cannot write '{}': {}",
                 (dir / "metrics.jsonl").string(), std::strerror(errno));
  }
  double wall_s() const {
    return position.wall_time_s + std::chrono::duration<double>(Clock::now() - started).count();
  }

  RunSummary run();  // Trainer::run
  void check_run_dir() const;
  void open_run_dir();
  void build();
  void load_resume();  // before the run directory is touched: a refusal leaves it as it was
  void note_resume();  // after: the log, metrics.jsonl cut back to the checkpoint's step
  std::vector<std::string> check_resume(const RunPosition& saved,
                                        const std::string& saved_config) const;
  void save(const fs::path& path);
  void init_from_checkpoint();
  void save_step_checkpoint();
  void prune_step_checkpoints() const;
  void check_best_weights();  // on a resume, after note_resume

  Update train_step(LogWindow& window);
  bool next_batch();
  void backward_batch(bool last_of_update, LogWindow& window);
  DeviceWindow::Reading check_window(const LogWindow& window) const;
  void log_update(const Update& update, LogWindow& window, Progress& progress, bool read_due);
  bool validation_due(const Update& update) const;
  bool step_checkpoint_due() const;
  bool patience_spent() const;
  bool validate();
  RunSummary stop_here(int signal);
  RunSummary run_profile();
  RunSummary finish();
  Metrics test_best_weights(const Metrics& test_last);
  void write_summary(const RunSummary& r);
};

}  // namespace relpos
