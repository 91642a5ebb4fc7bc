// The training state (DESIGN §12, §13): everything a resumed run needs to continue bit-exactly,
// named once in one list (TrainingState::visit in training_state.cpp) that save and load both
// walk, so no part is written without being read back. The file layout is train/checkpoint.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/module_state.h"  // the module's and optimizer's part, also read alone
#include "train/optimizer.h"
#include "train/task.h"

namespace relpos {

// Where a run stands between two updates, and its best validation so far.
struct RunPosition {
  int64_t step = 0;                       // updates done
  int64_t epoch = 0;                      // the epoch being read (0-based)
  int64_t batch_in_epoch = 0;             // its batches already consumed
  int64_t evals_without_improvement = 0;  // validations since the best (train.patience)
  int64_t best_step = 0;                  // the update of the best validation
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // NaN: no validation yet
  double wall_time_s = 0;   // seconds of the run before the clock of this session last started
  double train_time_s = 0;  // seconds of forward + backward + update, all sessions
  // The train record being gathered (metrics.jsonl): its updates so far and their loss sum (over
  // the ranks), so the first record after a resume averages the same updates as without one.
  int64_t record_updates = 0;
  double record_loss_sum = 0;
  Metrics best_val, last_val;
};

// Called by load once the position and the checkpoint's configuration (YAML text, "" when it has
// none) are read, before the task and the random streams are restored: a resume's own refusals.
using ResumeCheck = std::function<void(const RunPosition& position, const std::string& config)>;

// One run's training state: the model's parameters, buffers, generators and counters; the
// optimizer's state; the position (the schedule's lr is a function of the step); the task's
// place in its data and its state between batches (a language model's memory); each rank's
// random streams (dropout, data order draws); the best validation and patience.
class TrainingState {
 public:
  // `config`: the run's resolved configuration (YAML text), saved with the state.
  TrainingState(Task& task, Optimizer& optimizer, RunPosition& position, std::string config);

  // A fresh run: the task at its first batch, each rank its own random streams.
  void start();
  // The state as checkpoint data. A collective: every rank calls it, and rank 0's data holds
  // every rank's generators and task state.
  CheckpointData save();
  // The state from checkpoint data (`source` names it in errors); `check` as for ResumeCheck.
  // Refuses data without the position's counters:
  //   [train] '<source>' is not a training checkpoint (no 'step')
  void load(const CheckpointData& data, const std::string& source, const ResumeCheck& check = {});

 private:
  template <typename Io>
  void visit(Io& io);

  Task& task_;
  Optimizer& optimizer_;
  RunPosition& position_;
  std::string config_;
};

}  // namespace relpos
