// Evaluation shared by the trainer and `relpos eval`: a model over one split in eval mode with no
// graph, the split's metrics, and optionally every logit in dataset order.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/data_loader.h"
#include "layers/models/model.h"
#include "train/config.h"
#include "train/metrics.h"

namespace relpos {

// The batch as model inputs on `device`.
ClassifierInputs classifier_inputs(const Batch& batch, Device device);

// The loader options a run uses for `dataset`: batch size, shuffling with the run's seed and
// drop_last for training only, padding to the batch's longest sequence, the model's CLS/SEP ids.
DataLoaderOptions run_loader_options(const RunConfig& config, const Classifier& model,
                                     bool training);

struct Evaluation {
  ClassificationMetrics metrics;
  Tensor logits;  // [n, classes] f32 on the CPU, in dataset order (keep_logits only)
  Tensor labels;  // [n] i64
};

// max_batches 0: the whole split. The model is left in eval mode.
Evaluation evaluate(Classifier& model, DataLoader& loader, Device device, int64_t max_batches,
                    bool keep_logits);

// An HDF5 file with datasets `logits` [n, classes] (f32) and `labels` [n] (i64), written to a
// temp file and renamed.
void write_predictions(const std::string& path, const Tensor& logits, const Tensor& labels);

}  // namespace relpos
