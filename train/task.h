// A training task (DESIGN §12): what the one training loop (train/trainer.h) and `relpos eval`
// need to know about classification or language modelling: the model, how a training batch is
// made and scored, how a split is evaluated, which metrics there are (the first picks the best
// checkpoint by default), and the state carried from batch to batch (a language model's memory),
// which is part of the training state and saved with the checkpoint.
//   classification_task.cpp   labelled sequences through DataLoader; accuracy, macro-F1
//   lm_task.cpp               an ordered character stream with memory; bpc, perplexity
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/models/model.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/metrics.h"

namespace relpos {

struct TrainLoss {
  Var loss;           // the batch's mean loss, its graph kept for backward; undefined when this
                      // rank's share of the batch is empty (data parallel)
  int64_t count = 0;  // the examples or tokens it averages over
};

// What one split's data is, so that the ranks of a job can check they read the same
// (train/distributed.h check_ranks_agree).
struct SplitPrint {
  std::string split;
  int64_t items = 0;  // examples or characters
  uint64_t hash = 0;  // FNV-1a of their content
};

class Task {
 public:
  virtual ~Task() = default;

  virtual Model& model() = 0;
  // What the run trains on, for the log ("7,200 training examples").
  virtual std::string describe() const = 0;
  // The metrics evaluate() reports; the first is the default of train.metric.
  virtual std::vector<std::string> metric_names() const = 0;
  // What a batch's count counts: "examples" or "tokens".
  virtual std::string unit() const = 0;

  virtual int64_t batches_per_epoch() const = 0;
  // Positions the training stream at batch `batch` (0-based) of epoch `epoch`; a resumed run
  // continues where its checkpoint stood.
  virtual void seek(int64_t epoch, int64_t batch) = 0;
  // The next training batch of the current epoch, in training mode.
  virtual TrainLoss next_loss() = 0;

  // Metrics of split "train", "val" or "test" in eval mode without a graph (max_batches 0: the
  // whole split); the model is left in eval mode.
  virtual Metrics evaluate(const std::string& split, int64_t max_batches) = 0;
  // Per-prediction outputs of `split` as an HDF5 file at `path` (written atomically).
  virtual void write_predictions(const std::string& split, const std::string& path) = 0;

  // The state carried between training batches, into and out of a checkpoint.
  virtual void save_state(CheckpointData& data) const {}
  virtual void restore_state(const CheckpointData& data) {}
  // Refuses a checkpoint (at `path`) that was trained on data this task reads differently: a
  // language model's vocabulary (the byte of each id), naming the first id that differs.
  virtual void check_checkpoint(const CheckpointData& data, const std::string& path) const {}
  // A print of every split the task loaded.
  virtual std::vector<SplitPrint> data_prints() const = 0;
};

// The task of `config` (by data.dataset's task kind in the dataset registry), with the
// model built from config.seed and moved to `device`, and the data of `splits` loaded.
std::unique_ptr<Task> make_task(const RunConfig& config, Device device,
                                const std::vector<std::string>& splits = {"train", "val", "test"});

// Whether data.dataset is registered for language modelling (datasets/dataset_registry.h).
bool is_language_modelling(const DataConfig& data);

// The metric train.metric names, or the task's default; errors when the task has no such metric.
std::string selection_metric(const RunConfig& config, const Task& task);

// Fills the model's sizes the config left at 0 from the data: vocab_size; classifiers'
// num_classes and max_len (the content length); language models' max_len, the longest
// [memory; segment] of training and evaluation.
void complete_model_config(ModelConfig& model, const RunConfig& config, int64_t vocab_size,
                           int64_t num_classes);

}  // namespace relpos
