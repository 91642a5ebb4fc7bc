// Choosing the task of a run (train/task.h) and completing its model's sizes from the data.
#include "train/task.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "train/task_data.h"

namespace relpos {

std::unique_ptr<Task> make_classification_task(const RunConfig& config, Device device,
                                               const std::vector<std::string>& splits);
std::unique_ptr<Task> make_language_model_task(const RunConfig& config, Device device,
                                               const std::vector<std::string>& splits);

bool is_language_modelling(const DataConfig& data) {
  return dataset_task_kind(data) == TaskKind::language_modelling;
}

std::unique_ptr<Task> make_task(const RunConfig& config, Device device,
                                const std::vector<std::string>& splits) {
  RELPOS_CHECK(!splits.empty(), "task", "no split to load");
  const bool lm = is_language_modelling(config.data);
  RELPOS_CHECK(lm == is_language_model(config.model.type), "config",
               "model.type '{}' is {}, but data.dataset '{}' is {}", config.model.type,
               is_language_model(config.model.type) ? "a language model" : "a classifier",
               config.data.dataset,
               lm ? "a character corpus for language modelling (use transformer_xl or "
                    "causal_lm)"
                  : "a classification task (use sequence_classifier or dual_encoder)");
  return lm ? make_language_model_task(config, device, splits)
            : make_classification_task(config, device, splits);
}

std::string selection_metric(const RunConfig& config, const Task& task) {
  const std::vector<std::string> names = task.metric_names();
  if (config.train.metric.empty()) return names.front();
  RELPOS_CHECK(std::find(names.begin(), names.end(), config.train.metric) != names.end(), "config",
               "train.metric '{}' is not a metric of this task; it reports {}", config.train.metric,
               fmt::join(names, ", "));
  return config.train.metric;
}

void complete_model_config(ModelConfig& model, const RunConfig& config, int64_t vocab_size,
                           int64_t num_classes) {
  if (model.vocab_size == 0) model.vocab_size = vocab_size;
  if (!is_language_modelling(config.data)) {
    if (model.num_classes == 0) model.num_classes = num_classes;
    if (model.max_len == 0) model.max_len = content_length(config.data);
    return;
  }
  // Keys a layer sees at most, [memory; segment], in training or in evaluation.
  const int64_t train_keys = config.data.tgt_len + model.mem_len;
  const int64_t eval_keys = config.eval.tgt_len.value_or(config.data.tgt_len) +
                            config.eval.mem_len.value_or(model.mem_len);
  if (model.max_len == 0) model.max_len = std::max(train_keys, eval_keys);
}

}  // namespace relpos
