// Trainer (DESIGN §6): one run of a RunConfig. Trains for train.steps updates or train.epochs
// epochs (with gradient accumulation, clipping, the schedule's lr), validates every
// train.eval_every updates (or at each epoch end), keeps checkpoints/last.h5 and best.h5 (by
// train.metric) and every train.save_every updates a step checkpoint (train.keep_last of them),
// starts from train.init_from's parameters when fine-tuning, stops early after train.patience
// validations without improvement, and finally tests with the last and with the best weights. The
// run directory holds config.yaml, metrics.jsonl (one JSON object per log or eval event), log.txt,
// checkpoints/ and summary.json. On the CPU a run is deterministic, and a resumed run continues
// bit-exactly. Under mpirun every rank runs a Trainer and they train one model data-parallel
// (train/distributed.h): rank 0 alone writes the run directory and logs; on a GPU host rank r takes
// GPU local_rank mod devices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "layers/models/model.h"
#include "train/config.h"
#include "train/metrics.h"

namespace relpos {

struct TrainerOptions {
  std::string resume;  // a checkpoint of this run to continue from ("" = start afresh)
  // Progress and log lines on stderr; false: warnings only (log.txt is written either way).
  bool verbose = true;
  // End this session after this update as an interruption would, saving checkpoints/last.h5
  // (after the validation due at that update; no test, no summary; the last update's too); 0:
  // run to the end. An update the session does not make is refused.
  int64_t stop_at_step = 0;
  // SIGINT or SIGTERM during the updates ends the session after the update under way, as
  // stop_at_step does there (train/stop_signals.h); the command-line tool asks for it.
  bool stop_on_signals = false;
  // Resume even when the configuration differs from the checkpoint's in keys that change what
  // the run computes (steps, model, optimizer, ...); otherwise such a resume is refused, naming
  // the keys.
  bool allow_config_change = false;
  // Start afresh in a folder that already holds a run, removing that run's files (config.yaml,
  // log.txt, metrics.jsonl, summary.json, checkpoints/); otherwise such a folder is refused
  // unless the run resumes.
  bool overwrite = false;
  // Profile: after 2 warm-up updates and N timed without the profiler, N updates recorded by the
  // profiler (autograd/profiler.h); the run then ends with RunSummary::profile and writes no
  // checkpoint, validation, test or summary. 0: train.
  int64_t profile_steps = 0;
};

struct RunSummary {
  int64_t steps = 0;  // updates done
  double epochs = 0;  // passes over the training split (fractional)
  bool stopped_early = false;
  int64_t best_step = 0;  // the update of the best validation
  std::string metric;     // the one that picked the best checkpoint
  Metrics best_val, last_val, test_last, test_best;
  double wall_time_s = 0;         // the whole run, this and earlier sessions of a resumed run
  double train_time_s = 0;        // forward + backward + update only
  int64_t peak_memory_bytes = 0;  // the device allocator's peak during this session
  int64_t parameters = 0;
  std::string run_dir;
  bool finished = false;  // false when the session ended at TrainerOptions::stop_at_step
  int stop_signal = 0;    // or by this signal (TrainerOptions::stop_on_signals)
  // Whether this process owns the run's files and reports it: true but on ranks > 0 of a
  // data-parallel job (train/distributed.h), whose summaries are the same.
  bool primary = true;
  std::string profile;  // TrainerOptions::profile_steps: the tables (train/profile_report.h)
};

class Trainer {
 public:
  Trainer(RunConfig config, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  RunSummary run();
  Model& model();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace relpos
