// The classification task (train/task.h): labelled sequences (or document pairs) from the readers
// of train/task_data.h through DataLoader, cross-entropy, accuracy and macro-F1. Predictions:
// logits [n, classes] (f64 for an f64 model, else f32) and labels [n] (i64) in dataset order.
// In a data-parallel job each rank reads its rows of every batch (train/distributed.h) and
// evaluation sums every rank's counts.
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/profiler.h"
#include "core/comm/comm.h"
#include "core/fnv1a.h"
#include "datasets/data_loader.h"
#include "train/root_datasets.h"
#include "train/task.h"
#include "train/task_data.h"

namespace relpos {
namespace {

ClassifierInputs classifier_inputs(const Batch& batch, Device device) {
  ClassifierInputs in;
  in.tokens = batch.tokens.to(device);
  in.key_mask = batch.key_mask.to(device);
  if (batch.tokens2.defined()) {
    in.tokens2 = batch.tokens2.to(device);
    in.key_mask2 = batch.key_mask2.to(device);
  }
  return in;
}

// Batch size, shuffling with the run's seed and drop_last for training only, padding to the
// batch's longest sequence, the model's CLS/SEP ids.
DataLoaderOptions loader_options(const RunConfig& config, const Classifier& model, bool training) {
  DataLoaderOptions o;
  o.batch_size = training || config.data.eval_batch_size == 0 ? config.data.batch_size
                                                              : config.data.eval_batch_size;
  o.shuffle = training;
  o.seed = config.seed;
  o.drop_last = training && config.data.drop_last;
  o.prefetch = config.data.prefetch;
  o.shard = comm::rank();
  o.shards = comm::size();
  const SpecialTokens special = model.special_tokens();
  o.collate.cls_id = special.cls_id;
  o.collate.sep_id = special.sep_id;
  o.collate.pad_id = 0;
  o.collate.index_dtype = DType::i64;
  return o;
}

std::vector<int64_t> to_vector(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).to(DType::i64).contiguous();
  const int64_t* p = c.data<int64_t>();
  return {p, p + c.numel()};
}

// A model that reads whole images (model.max_len pixels, unpadded) refuses, before a run starts,
// data with an example of another length; it failed at the first batch holding one.
void check_whole_examples(const Classifier& model, const std::map<std::string, Dataset>& sets,
                          bool pairs) {
  const std::string reader = model.whole_examples_reader();
  if (reader.empty()) return;
  const int64_t length = model.config().max_len;
  for (const auto& [split, set] : sets)
    for (size_t i = 0; i < set.examples.size(); ++i) {
      const Example& e = set.examples[i];
      for (const std::vector<int32_t>* tokens : {&e.tokens, &e.tokens2}) {
        if (tokens == &e.tokens2 && !pairs) continue;
        const auto n = static_cast<int64_t>(tokens->size());
        RELPOS_CHECK(n == length, "config",
                     "{} reads whole images of {} pixels (model.max_len), but example {} of the "
                     "{} split has {} tokens; it needs data whose every example is such an image "
                     "(model.max_len 0: the data's length)",
                     reader, length, i, split, n);
      }
    }
}

class ClassificationTask final : public Task {
 public:
  ClassificationTask(const RunConfig& config, Device device, const std::vector<std::string>& splits)
      : config_(config), device_(device) {
    for (const std::string& split : splits) sets_[split] = load_split(config.data, split);
    const Dataset& first = sets_.begin()->second;
    ModelConfig model_config = config.model;
    complete_model_config(model_config, config, first.vocab_size, first.num_classes);
    Generator gen(config.seed);
    model_ = make_classifier(model_config, gen);
    check_whole_examples(*model_, sets_, is_pair_dataset(config.data));
    model_->to(device);
    for (const auto& [split, set] : sets_)
      loaders_[split] =
          std::make_unique<DataLoader>(set, loader_options(config, *model_, split == "train"));
    // drop_last drops every batch of a training split smaller than one (it ran dry at step 1).
    RELPOS_CHECK(!loaders_.count("train") || loaders_.at("train")->num_batches() > 0, "config",
                 "data.batch_size {} is more than the {} training examples and data.drop_last "
                 "drops the short batch, so an epoch has none: lower data.batch_size or set "
                 "data.drop_last: false",
                 config.data.batch_size, sets_.at("train").examples.size());
  }

  Model& model() override { return *model_; }
  std::string describe() const override {
    return fmt::format("{} training examples", sets_.at("train").examples.size());
  }
  std::vector<std::string> metric_names() const override {
    return {"accuracy", "macro_f1", "loss"};
  }
  std::string unit() const override { return "examples"; }
  std::vector<SplitPrint> data_prints() const override {
    std::vector<SplitPrint> prints;
    for (const char* split : {"train", "val", "test"}) {
      const auto it = sets_.find(split);
      if (it == sets_.end()) continue;
      const Dataset& set = it->second;
      Fnv1a hash;
      for (const Example& e : set.examples) {
        for (const std::vector<int32_t>* tokens : {&e.tokens, &e.tokens2}) {
          const auto n = static_cast<int64_t>(tokens->size());
          hash.add(&n, sizeof n);
          hash.add(tokens->data(), tokens->size() * sizeof(int32_t));
        }
        hash.add(&e.label, sizeof e.label);
      }
      prints.push_back({split, static_cast<int64_t>(set.examples.size()), hash.value});
    }
    return prints;
  }

  int64_t batches_per_epoch() const override { return loader("train").num_batches(); }
  void seek(int64_t epoch, int64_t batch) override {
    DataLoader& train = loader("train");
    train.begin_epoch(epoch);
    Batch skipped;
    for (int64_t b = 0; b < batch; ++b) train.next(skipped);
  }
  TrainLoss next_loss() override {
    const AutocastGuard precision(products_dtype(config_));
    model_->train();
    Batch batch;
    RELPOS_CHECK(loader("train").next(batch), "train", "the training loader ran dry");
    profile::mark("data");
    if (batch.size == 0) return {};  // this rank's share of a short batch is empty
    const Var logits = model_->forward(classifier_inputs(batch, device_));  // [B, classes]
    return {cross_entropy(logits, batch.labels.to(device_)), batch.size};
  }

  Metrics evaluate(const std::string& split, int64_t max_batches) override {
    return run(split, max_batches, nullptr, nullptr);
  }
  void write_predictions(const std::string& split, const std::string& path) override {
    RELPOS_CHECK(!comm::distributed(), "predictions",
                 "predictions are written by one process: run relpos eval without mpirun");
    std::vector<Tensor> logits, labels;
    run(split, 0, &logits, &labels);
    RELPOS_CHECK(!logits.empty(), "predictions", "split '{}' has no examples", split);
    // In the model's dtype: an f64 model's logits are not rounded to f32 (bf16 products give f32).
    const Tensor all = cat(logits, 0);
    relpos::write_root_datasets("predictions", path,
                                {{"logits", all.dtype() == DType::f64 ? all : all.to(DType::f32)},
                                 {"labels", cat(labels, 0).to(DType::i64)}});
  }

 private:
  DataLoader& loader(const std::string& split) const {
    const auto it = loaders_.find(split);
    RELPOS_CHECK(it != loaders_.end(), "task", "split '{}' was not loaded", split);
    return *it->second;
  }

  // One pass over `split`; keeps the logits [B, C] and labels [B] of each batch when asked.
  Metrics run(const std::string& split, int64_t max_batches, std::vector<Tensor>* logits_out,
              std::vector<Tensor>* labels_out) {
    model_->eval();
    NoGradGuard no_grad;
    const AutocastGuard precision(products_dtype(config_));
    MetricAccumulator metrics(model_->num_classes());
    DataLoader& data = loader(split);
    data.begin_epoch(0);
    int64_t batches = 0;
    for (Batch batch; (max_batches == 0 || batches < max_batches) && data.next(batch); ++batches) {
      if (batch.size == 0) continue;  // this rank's share of a short batch
      const Tensor logits = model_->forward(classifier_inputs(batch, device_)).value();
      const Tensor labels = batch.labels.to(device_);
      const double loss_sum =
          cross_entropy(logits, labels, -100, Reduction::sum).to(Device::cpu()).item();
      metrics.add(loss_sum, to_vector(argmax(logits, 1)), to_vector(batch.labels));
      if (logits_out != nullptr) {
        logits_out->push_back(logits.to(Device::cpu()));
        labels_out->push_back(batch.labels.to(Device::cpu()));
      }
    }
    metrics.all_reduce();
    return metrics.result();
  }

  RunConfig config_;
  Device device_;
  std::map<std::string, Dataset> sets_;
  std::map<std::string, std::unique_ptr<DataLoader>> loaders_;
  std::shared_ptr<Classifier> model_;
};

}  // namespace

std::unique_ptr<Task> make_classification_task(const RunConfig& config, Device device,
                                               const std::vector<std::string>& splits) {
  return std::make_unique<ClassificationTask>(config, device, splits);
}

}  // namespace relpos
