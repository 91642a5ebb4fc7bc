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

namespace {

// Keys that mean something to one task only: on the other task's run they were accepted and
// ignored, so a run did something else than its file says.
void refuse_other_task_keys(const RunConfig& c, TaskKind task) {
  const DataConfig& d = c.data;
  if (task == TaskKind::language_modelling) {
    // A classifier's limits count examples; a language model reads whole texts.
    RELPOS_CHECK(d.train_limit == 0 && d.eval_limit == 0, "config",
                 "data.train_limit and data.eval_limit count a classifier's examples; a language "
                 "model reads its splits whole (got {} and {}): shorten the text files instead",
                 d.train_limit, d.eval_limit);
    const char* key = d.max_len > 0 ? "data.max_len" : d.drop_last ? "data.drop_last" : nullptr;
    RELPOS_CHECK(key == nullptr, "config",
                 "{} is a classifier's setting (its examples' length and batches); a language "
                 "model reads segments of data.tgt_len from one stream: remove it",
                 key);
    return;
  }
  const EvalConfig& e = c.eval;
  const char* key = d.tgt_len != 0              ? "data.tgt_len"
                    : e.tgt_len.has_value()     ? "eval.tgt_len"
                    : e.mem_len.has_value()     ? "eval.mem_len"
                    : e.clamp_len.has_value()   ? "eval.clamp_len"
                    : e.same_length.has_value() ? "eval.same_length"
                    : e.layout != "relpos"      ? "eval.layout"
                                                : nullptr;
  RELPOS_CHECK(key == nullptr, "config",
               "{} is a language model's setting (segments, memory); data.dataset '{}' is "
               "classified by example: remove it",
               key, d.dataset);
}

}  // namespace

std::unique_ptr<Task> make_task(const RunConfig& config, Device device,
                                const std::vector<std::string>& splits) {
  RELPOS_CHECK(!splits.empty(), "task", "no split to load");
  const TaskKind model_task = model_registry().at(config.model.type).task;
  const TaskKind data_task = dataset_task_kind(config.data);
  RELPOS_CHECK(model_task == data_task, "config",
               "model.type '{}' is for {}, but data.dataset '{}' is for {} (use {})",
               config.model.type, task_kind_name(model_task), config.data.dataset,
               task_kind_name(data_task), fmt::join(model_types_for(data_task), " or "));
  refuse_other_task_keys(config, data_task);
  return data_task == TaskKind::language_modelling
             ? make_language_model_task(config, device, splits)
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

namespace {
// tgt_len + mem_len, the keys a layer sees; a sum past int64 is refused by its keys.
int64_t keys_seen(const char* tgt_key, int64_t tgt_len, const char* mem_key, int64_t mem_len) {
  int64_t keys = 0;
  RELPOS_CHECK(!__builtin_add_overflow(tgt_len, mem_len, &keys), "config",
               "{} {} plus {} {} overflows int64", tgt_key, tgt_len, mem_key, mem_len);
  return keys;
}
}  // namespace

void complete_model_config(ModelConfig& model, const RunConfig& config, int64_t vocab_size,
                           int64_t num_classes) {
  // A size set below the data's would fail at the first batch, in an embedding lookup or the loss.
  RELPOS_CHECK(model.vocab_size == 0 || model.vocab_size >= vocab_size, "config",
               "model.vocab_size {} is below the {} symbols of dataset '{}' (0: the dataset's)",
               model.vocab_size, vocab_size, config.data.dataset);
  if (model.vocab_size == 0) model.vocab_size = vocab_size;
  if (model_registry().at(model.type).task == TaskKind::classification) {
    const int64_t classes = model.own.get<int64_t>("num_classes", 0);
    RELPOS_CHECK(classes == 0 || classes >= num_classes, "config",
                 "model.num_classes {} is below the {} classes of dataset '{}' (0: the dataset's)",
                 classes, num_classes, config.data.dataset);
    if (classes == 0) model.own.set("num_classes", num_classes);
    // The data keeps up to `content` tokens of each example (of each side of a pair); a model
    // built for fewer failed at the first batch that held a longer one.
    const int64_t content = content_length(config.data);
    RELPOS_CHECK(model.max_len == 0 || model.max_len >= content, "config",
                 "model.max_len {} is below the {} tokens the data keeps of an example ({}): raise "
                 "model.max_len (0: the data's) or lower data.max_len",
                 model.max_len, content,
                 config.data.max_len > 0
                     ? "data.max_len"
                     : fmt::format("the default length of dataset '{}'", config.data.dataset));
    if (model.max_len == 0) model.max_len = content;
    return;
  }
  // Keys a layer sees at most, [memory; segment], in training or in evaluation; mem_len is a key
  // of every language model type (layers/models/lm_transformer.h LmConfig).
  const int64_t mem_len = model.own.get<int64_t>("mem_len", 0);
  const int64_t train_keys =
      keys_seen("data.tgt_len", config.data.tgt_len, "model.mem_len", mem_len);
  const int64_t eval_keys =
      keys_seen("eval.tgt_len", config.eval.tgt_len.value_or(config.data.tgt_len), "eval.mem_len",
                config.eval.mem_len.value_or(mem_len));
  if (model.max_len == 0) model.max_len = std::max(train_keys, eval_keys);
}

}  // namespace relpos
