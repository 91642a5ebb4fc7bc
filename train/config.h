// Run configuration (DESIGN §6): a YAML file becomes typed structs. `base: other.yaml` (or a list
// of files, relative to the including file) is merged first, mapping by mapping, and the file's
// own keys win; `--set a.b=value` overrides are applied last (the value is read as YAML, so
// `--set model.positional.grid=[14,14]` gives a list). Unknown keys and values of the wrong type
// are errors naming the key path and the keys valid there. The resolved YAML (after bases and
// overrides, with every default written in) is kept in RunConfig::yaml: the run directory and
// every checkpoint store it, and parsing it again gives the same config.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/options.h"
#include "layers/models/model.h"

namespace relpos {

struct DataConfig {
  // A name in the dataset registry (datasets/dataset_registry.h; `relpos list` prints them).
  std::string dataset;
  std::string dir;      // where the files are; default data/<dataset>
  int64_t max_len = 0;  // content tokens kept per sequence; 0: the dataset's default length
  // Language modelling: batch_size rows of the stream read in segments of tgt_len tokens
  // (Transformer-XL's LMOrderedIterator).
  int64_t tgt_len = 0;
  int64_t batch_size = 32;
  int64_t eval_batch_size = 0;  // 0: batch_size
  int64_t train_limit = 0;      // keep the first N training examples (0: all)
  int64_t eval_limit = 0;       // keep the first N validation and test examples (0: all)
  int64_t prefetch = 2;         // batches assembled ahead on a background thread
  bool drop_last = false;       // drop the last incomplete training batch (LRA Retrieval)
  // The dataset's own keys (e.g. image_pool, tokenizer, val_fraction, tokens), read and checked
  // by its registry entry.
  Options own{"data"};
};

struct TrainConfig {
  int64_t steps = 0;  // optimizer updates; exactly one of steps and epochs is > 0
  int64_t epochs = 0;
  int64_t eval_every = 0;     // updates between validations; 0: at the end of every epoch
  int64_t log_every = 50;     // updates between log lines / metrics.jsonl records
  double clip_grad_norm = 0;  // global L2 norm limit; 0: no clipping
  int64_t accumulate = 1;     // batches whose gradients are summed into one update
  // f32, or bf16: matrix products round their operands to bf16 and sum in f32 (autograd/
  // autocast.h); parameters, gradients, optimizer state and checkpoints stay f32. Also how
  // validation, `relpos eval` and `relpos generate` run the model.
  std::string precision = "f32";
  // Early stopping: stop after this many validations without improving `metric` (0: never).
  int64_t patience = 0;
  // The best checkpoint and patience follow it: accuracy | macro_f1 | loss (classification),
  // bpc | loss | perplexity (language modelling); "": accuracy, or bpc for language models.
  std::string metric;
  std::string out;  // the run directory; default runs/<name>
  // Checkpoint policy: every save_every updates (0: never) a checkpoint of the whole training
  // state, checkpoints/step-<8-digit step>.h5, besides last.h5 and best.h5; keep_last > 0 keeps
  // only the newest that many of them.
  int64_t save_every = 0;
  int64_t keep_last = 0;
  // Fine-tuning: a fresh run takes the parameters named by init_params (globs over dotted names;
  // "!glob" leaves out) from this checkpoint; the optimizer, schedule and position start anew.
  std::string init_from;
  std::vector<std::string> init_params = {"*"};
};

struct EvalConfig {
  int64_t max_batches = 0;  // validation uses at most this many batches (0: the whole split)
  // Language models, for validation, test and `relpos eval` (Transformer-XL evaluates with a
  // shorter segment and a longer memory than it trains with); unset: as in training.
  std::optional<int64_t> tgt_len, mem_len, clamp_len;
  std::optional<bool> same_length;
  // Language models: how validation and test are cut into rows (datasets/lm_batches.h): relpos
  // (every target scored once) or reference (Transformer-XL's: each row's first character and
  // the tail after the rows unscored, as the paper's numbers were computed).
  std::string layout = "relpos";
};

struct DebugConfig {
  // Check every forward output and gradient for NaN/Inf and name the op (slow; also
  // RELPOS_DETECT_ANOMALY=1). Without it a non-finite loss still stops the run at its step.
  bool detect_anomaly = false;
};

// Each default of a configuration by its key path ("train.log_every"), as flow YAML text: what
// the key means where a file leaves it out.
using ConfigDefaults = std::map<std::string, std::string>;

struct RunConfig {
  std::string name;  // default: the config file's stem
  ModelConfig model;
  DataConfig data;
  Options optimizer{"optimizer"};  // {type: adamw, lr: ...}; train/optimizer.h
  Options schedule{"schedule"};    // {type: constant} when absent; train/schedule.h
  TrainConfig train;
  EvalConfig eval;
  std::string device = "cpu";  // cpu | cuda
  uint64_t seed = 0;
  DebugConfig debug;
  // The resolved configuration text: the files, the overrides and every default. The attention
  // and positional mappings are read only when the model is built, so their defaults join it
  // then (complete_config).
  std::string yaml;
  ConfigDefaults defaults;
};

// The dtype train.precision gives the model's matrix products (an AutocastGuard's argument).
inline DType products_dtype(const RunConfig& c) {
  return c.train.precision == "bf16" ? DType::bf16 : DType::f32;
}

// "key=value", an override whose value reads back as exactly `value` (a path or name a
// command-line option gives: `#`, `: `, `~` or quotes in it are text, not YAML).
std::string text_override(const std::string& key, const std::string& value);

// Reads `path` with its bases and the `--set` overrides ("a.b=value").
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Adds to config.yaml and config.defaults the defaults of every component mapping (model,
// model.attention, model.positional, data, optimizer, schedule) as far as they have been read:
// called after the run's model is built, it makes config.yaml the whole configuration.
void complete_config(RunConfig& config);

// A key whose value differs between two resolved configs, each value as flow YAML text.
struct ConfigChange {
  std::string key, before, after;
};

// Every key whose value differs between two resolved configs, in key order (`attention: softmax`
// is compared as {type: softmax}). A key `before` leaves out (a checkpoint of an older relpos,
// which wrote no defaults) stands for its entry in `after_defaults`, or "<none>"; a key only
// `before` has is "<none>" after.
std::vector<ConfigChange> config_changes(const std::string& before, const std::string& after,
                                         const ConfigDefaults& after_defaults = {});

// config_changes as "train.steps: 12 -> 24", leaving out keys that do not change what a run
// computes: name, device, train.out, train.log_every, train.save_every, train.keep_last,
// train.init_from, train.init_params, debug.*, data.dir, data.prefetch (eval.* is kept: it
// decides the best weights and early stopping). A resumed run refuses these changes unless told
// to allow them.
std::vector<std::string> trajectory_changes(const std::string& before, const std::string& after,
                                            const ConfigDefaults& after_defaults = {});

// Parses resolved YAML text relpos wrote (e.g. from a checkpoint; parse_config_yaml);
// `origin` names it in errors.
RunConfig parse_config(const std::string& yaml_text, const std::string& origin,
                       const std::vector<std::string>& overrides = {});
// The same, of a run's config.yaml at `path`.
RunConfig load_written_config(const std::string& path);

}  // namespace relpos
