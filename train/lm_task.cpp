// The language-modelling task (train/task.h): a character corpus (datasets/char_corpus.h) read as
// Transformer-XL reads it: data.batch_size contiguous rows in segments of data.tgt_len, the
// model's state (its memory) carried from segment to segment, and reset where a stream starts
// (every epoch, every evaluation). Evaluation uses eval.tgt_len / mem_len / clamp_len /
// same_length where set, reads the tail after the rows as one row's last segments (so every
// character but the first is predicted exactly once), and reports the mean cross-entropy per
// character in nats (loss), in bits (bpc) and its perplexity. The training memory is saved with
// each checkpoint, so a resumed run continues bit-exactly. Predictions: targets [n] (i64) and
// log_prob [n] (the log-probability of each target; f64 for an f64 model, else f32) in stream
// order, n = characters - 1. In a data-parallel job each rank reads its rows of the batch
// (train/distributed.h) and keeps their memory; checkpoints hold every row's, and evaluation sums
// every rank's loss and tokens.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/profiler.h"
#include "core/comm/comm.h"
#include "core/fnv1a.h"
#include "datasets/char_corpus.h"
#include "datasets/lm_batches.h"
#include "train/checkpoint_contents.h"
#include "train/distributed.h"
#include "train/root_datasets.h"
#include "train/task.h"
#include "train/task_data.h"

namespace relpos {
namespace {

constexpr const char* kWho = "lm";

Tensor vocabulary_tensor(const CharCorpus& corpus) {
  std::vector<uint8_t> bytes = corpus.symbols;
  return Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())});
}

// The state of rows [from, to) of every tensor in `state`.
LmState rows_of(const LmState& state, int64_t from, int64_t to) {
  LmState out;
  for (const auto& [name, t] : state) out[name] = t.slice(0, from, to).contiguous();
  return out;
}

// A byte as a reader would name it: 'a', or 0x0a where it does not print.
std::string byte_name(uint8_t byte) {
  return byte >= 0x21 && byte < 0x7f ? fmt::format("'{}'", static_cast<char>(byte))
                                     : fmt::format("0x{:02x}", byte);
}

// Refuses a segment of `len` tokens (key `len_key`) after a memory of `mem` (`mem_key`) that the
// model's positions do not cover (LanguageModel::max_keys); it failed at the first batch.
void check_keys_covered(const LanguageModel& model, const char* len_key, int64_t len,
                        const char* mem_key, int64_t mem) {
  const int64_t covered = model.max_keys();
  RELPOS_CHECK(covered == 0 || len + mem <= covered, "config",
               "{}'s positions cover {} keys (model.max_len {}) but {} {} plus {} {} make "
               "{}: raise model.max_len (0: sized from these) or shorten {}",
               model.config().type, covered, model.config().max_len, len_key, len, mem_key, mem,
               len + mem, len_key);
}

class LanguageModelTask final : public Task {
 public:
  LanguageModelTask(const RunConfig& config, Device device, const std::vector<std::string>& splits)
      : config_(config), device_(device), corpus_(load_corpus(config.data)) {
    const DataConfig& data = config.data;
    RELPOS_CHECK(data.tgt_len > 0, kWho,
                 "language modelling reads segments of data.tgt_len characters: set it (e.g. "
                 "512 as Transformer-XL)");
    ModelConfig model_config = config.model;
    complete_model_config(model_config, config, corpus_.vocab_size, 0);
    Generator gen(config.seed);
    model_ = make_language_model(model_config, gen);
    model_->to(device);
    train_context_ = model_->context();
    eval_context_ = {config.eval.mem_len.value_or(train_context_.mem_len),
                     config.eval.clamp_len.value_or(train_context_.clamp_len),
                     config.eval.same_length.value_or(train_context_.same_length)};
    model_->set_context(eval_context_);  // refuses what the model cannot evaluate with, now
    model_->set_context(train_context_);
    const int64_t eval_len = config.eval.tgt_len.value_or(data.tgt_len);
    check_keys_covered(*model_, "data.tgt_len", data.tgt_len, "model.mem_len",
                       train_context_.mem_len);
    check_keys_covered(*model_, config.eval.tgt_len ? "eval.tgt_len" : "data.tgt_len", eval_len,
                       config.eval.mem_len ? "eval.mem_len" : "model.mem_len",
                       eval_context_.mem_len);
    const int64_t eval_rows = data.eval_batch_size > 0 ? data.eval_batch_size : data.batch_size;
    // Each rank keeps the memory of its own rows, so every rank needs at least one.
    RELPOS_CHECK(std::min(data.batch_size, eval_rows) >= comm::size(), kWho,
                 "data.batch_size {} (eval rows {}) cannot be split over {} ranks: each rank "
                 "reads whole rows of the stream and needs at least one",
                 data.batch_size, eval_rows, comm::size());
    const LmLayout eval_layout = lm_layout_from_name(config.eval.layout, "eval.layout");
    for (const std::string& split : splits) {
      const bool training = split == "train";
      const int64_t rows = training ? data.batch_size : eval_rows;
      const LmLayout layout = training ? LmLayout::shared_boundaries : eval_layout;
      const auto n = static_cast<int64_t>(ids(split).size());
      RELPOS_CHECK(n >= LmBatches::min_ids(rows, layout), kWho,
                   "{}: the {} split has {} characters, too few for {} rows with a target each "
                   "(data.{}{}); it needs at least {}",
                   source(split), split, n, rows,
                   training || data.eval_batch_size == 0 ? "batch_size" : "eval_batch_size",
                   layout == LmLayout::reference ? " in eval.layout reference" : "",
                   LmBatches::min_ids(rows, layout));
      batches_.emplace(split,
                       LmBatches(ids(split), rows, training ? data.tgt_len : eval_len, layout));
    }
  }

  Model& model() override { return *model_; }
  std::string describe() const override {
    return fmt::format("{} training characters ({} symbols) in {} rows", corpus_.train.size(),
                       corpus_.vocab_size, config_.data.batch_size);
  }
  std::vector<std::string> metric_names() const override { return {"bpc", "loss", "perplexity"}; }
  std::string unit() const override { return "tokens"; }
  std::vector<SplitPrint> data_prints() const override {
    std::vector<SplitPrint> prints;
    for (const char* split : {"train", "val", "test"}) {
      if (!batches_.contains(split)) continue;
      const std::vector<uint8_t>& stream = ids(split);
      Fnv1a hash;
      hash.add(stream.data(), stream.size());
      prints.push_back({split, static_cast<int64_t>(stream.size()), hash.value});
    }
    return prints;
  }

  int64_t batches_per_epoch() const override { return batches("train").num_segments(); }
  void seek(int64_t epoch, int64_t batch) override {
    segment_ = batch;
    if (batch == 0) memory_.clear();  // the stream starts again
  }
  TrainLoss next_loss() override {
    const AutocastGuard precision(products_dtype(config_));
    model_->set_context(train_context_);
    model_->train();
    const LmBatches& train = batches("train");
    RELPOS_CHECK(segment_ < train.num_segments(), "train", "the training stream ran dry");
    const LmSegment segment = mine(train.segment(segment_++), train.batch());
    profile::mark("data");
    LmOutput out = model_->forward(segment.inputs.to(device_), memory_);
    memory_ = std::move(out.state);
    return {cross_entropy(flat(out.logits), segment.targets.reshape({-1}).to(device_)),
            segment.targets.numel()};
  }

  Metrics evaluate(const std::string& split, int64_t max_batches) override {
    double loss_sum = 0;
    int64_t tokens = 0;
    stream(split, max_batches,
           [&](const Tensor& logits, const Tensor& targets, const std::vector<int64_t>&) {
             loss_sum +=
                 cross_entropy(logits, targets, -100, Reduction::sum).to(Device::cpu()).item();
             tokens += targets.numel();
           });
    Tensor sums =
        Tensor::from_vector(std::vector<double>{loss_sum, static_cast<double>(tokens)}, {2});
    comm::all_reduce_sum(sums);  // every rank's rows (nothing in a job of one)
    return language_model_metrics(sums.data<double>()[0],
                                  static_cast<int64_t>(sums.data<double>()[1]));
  }

  void write_predictions(const std::string& split, const std::string& path) override {
    RELPOS_CHECK(!comm::distributed(), "predictions",
                 "predictions are written by one process: run relpos eval without mpirun");
    const auto n = static_cast<size_t>(batches(split).num_targets());
    std::vector<double> log_probs(n);  // written in the model's dtype
    std::vector<int64_t> targets(n);
    stream(split, 0,
           [&](const Tensor& logits, const Tensor& target, const std::vector<int64_t>& at) {
             const Tensor picked = gather(log_softmax(logits, 1), 1, target.reshape({-1, 1}));
             const auto values = picked.to(Device::cpu()).to(DType::f64).to_vector<double>();
             const auto ids = target.to(Device::cpu()).to_vector<int64_t>();
             for (size_t k = 0; k < at.size(); ++k) {
               log_probs[static_cast<size_t>(at[k])] = values[k];
               targets[static_cast<size_t>(at[k])] = ids[k];
             }
           });
    const int64_t count = static_cast<int64_t>(n);
    const DType dtype = model_->config().dtype == DType::f64 ? DType::f64 : DType::f32;
    relpos::write_root_datasets("predictions", path,
                                {{"targets", Tensor::from_vector(targets, {count})},
                                 {"log_prob", Tensor::from_vector(log_probs, {count}).to(dtype)}});
  }

  // The training memory under "memory.<name>", and the vocabulary (byte of each id, u8 [V])
  // under "vocabulary", so `relpos generate` can read and write text from the checkpoint alone.
  // Every row's memory (gathered from the ranks: a collective), whatever the job's size, so a
  // checkpoint resumes on any number of ranks.
  void save_state(CheckpointData& data) const override {
    for (const auto& [name, t] : memory_)
      data.state.emplace_back("memory." + name, gather_rows(t, config_.data.batch_size));
    data.state.emplace_back("vocabulary", vocabulary_tensor(corpus_));
  }
  void check_checkpoint(const CheckpointData& data, const std::string& path) const override {
    if (const auto trained = saved_vocabulary(data, path)) check_vocabulary(*trained, path);
  }
  void restore_state(const CheckpointData& data) override {
    memory_.clear();
    const int64_t rows = config_.data.batch_size;
    const Shard shard = my_shard(rows);
    for (const auto& [name, t] : data.state) {
      if (name.rfind("memory.", 0) != 0) continue;
      RELPOS_CHECK(t.dim() >= 1 && t.size(0) == rows, kWho,
                   "the checkpoint's memory '{}' holds {} rows; this run reads data.batch_size = "
                   "{}",
                   name.substr(7), t.dim() >= 1 ? t.size(0) : 0, rows);
      memory_[name.substr(7)] = t.slice(0, shard.begin, shard.end).contiguous().to(device_);
    }
  }

 private:
  // A model's ids mean the bytes of the vocabulary it was trained with: data whose symbols are
  // not the same (another text, one character replaced) would be scored through other meanings.
  void check_vocabulary(const std::vector<uint8_t>& trained, const std::string& path) const {
    const std::vector<uint8_t>& here = corpus_.symbols;
    if (trained == here) return;
    const auto only_in = [](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
      std::vector<std::string> out;
      for (const uint8_t byte : a)
        if (std::find(b.begin(), b.end(), byte) == b.end()) out.push_back(byte_name(byte));
      return out.empty() ? std::string("none") : fmt::format("{}", fmt::join(out, " "));
    };
    fail(kWho,
         "'{}' was trained on other symbols than '{}' holds ({} there, {} here; only in the "
         "checkpoint: {}; only in this data: {}): its ids would mean other characters",
         path, config_.data.dir, trained.size(), here.size(), only_in(trained, here),
         only_in(here, trained));
  }

  const std::vector<uint8_t>& ids(const std::string& split) const {
    if (split == "train") return corpus_.train;
    if (split == "val") return corpus_.valid;
    RELPOS_CHECK(split == "test", kWho, "unknown split '{}'; known: train, val, test", split);
    return corpus_.test;
  }
  const std::string& source(const std::string& split) const {
    const size_t at = split == "train" ? 0 : split == "val" ? 1 : 2;
    return corpus_.sources.at(at);
  }
  const LmBatches& batches(const std::string& split) const {
    const auto it = batches_.find(split);
    RELPOS_CHECK(it != batches_.end(), "task", "split '{}' was not loaded", split);
    return it->second;
  }
  // This rank's rows [shard of `rows`) of a segment.
  static LmSegment mine(const LmSegment& s, int64_t rows) {
    if (!comm::distributed()) return s;
    const Shard shard = my_shard(rows);
    return {s.inputs.slice(0, shard.begin, shard.end).contiguous(),
            s.targets.slice(0, shard.begin, shard.end).contiguous()};
  }
  static Var flat(const Var& logits) {  // [B, L, V] -> [B·L, V]
    return reshape(logits, {logits.size(0) * logits.size(1), logits.size(2)});
  }

  // The split as one stream from an empty memory, in the eval context and eval mode, without a
  // graph: f(logits [n, V], targets [n], at) per segment and for the tail, `at` holding each
  // target's index in the split's targets (its stream position - 1). max_batches 0: every
  // segment and the tail; otherwise the first max_batches segments.
  template <typename F>
  void stream(const std::string& split, int64_t max_batches, F&& f) {
    const LmBatches& data = batches(split);
    model_->set_context(eval_context_);
    model_->eval();
    NoGradGuard no_grad;
    const AutocastGuard precision(products_dtype(config_));
    LmState memory;
    const int64_t segments =
        max_batches > 0 ? std::min(max_batches, data.num_segments()) : data.num_segments();
    const Shard rows = my_shard(data.batch());  // this rank's rows (all of them in a job of one)
    int64_t column = 0;                         // where the segment starts in every row
    for (int64_t s = 0; s < segments; ++s) {
      const LmSegment segment = mine(data.segment(s), data.batch());
      const int64_t len = segment.targets.size(1);
      std::vector<int64_t> at;
      for (int64_t row = rows.begin; row < rows.end; ++row)
        for (int64_t j = 0; j < len; ++j) at.push_back(row * data.row_targets() + column + j);
      LmOutput out = model_->forward(segment.inputs.to(device_), memory);
      memory = std::move(out.state);
      f(flat(out.logits).value(), segment.targets.reshape({-1}).to(device_), at);
      column += len;
    }
    // The tail continues the last row, segment by segment: the rank holding that row reads it,
    // with its memory.
    if (max_batches == 0 && data.num_tail_segments() > 0 && rows.end == data.batch()) {
      const int64_t last = rows.size() - 1;
      LmState row_memory = rows_of(memory, last, last + 1);
      int64_t target = data.batch() * data.row_targets();
      for (int64_t s = 0; s < data.num_tail_segments(); ++s) {
        const LmSegment tail = data.tail_segment(s);
        std::vector<int64_t> at;
        for (int64_t j = 0; j < tail.targets.size(1); ++j) at.push_back(target++);
        LmOutput out = model_->forward(tail.inputs.to(device_), row_memory);
        row_memory = std::move(out.state);
        f(flat(out.logits).value(), tail.targets.reshape({-1}).to(device_), at);
      }
    }
    model_->set_context(train_context_);
  }

  RunConfig config_;
  Device device_;
  CharCorpus corpus_;
  std::shared_ptr<LanguageModel> model_;
  LmContext train_context_, eval_context_;
  std::map<std::string, LmBatches> batches_;
  int64_t segment_ = 0;  // the next training segment
  LmState memory_;       // the training stream's state after the last segment
};

}  // namespace

std::unique_ptr<Task> make_language_model_task(const RunConfig& config, Device device,
                                               const std::vector<std::string>& splits) {
  return std::make_unique<LanguageModelTask>(config, device, splits);
}

}  // namespace relpos
