// A checkpoint's model rebuilt for evaluation (checkpoint_eval.h).
#include "tools/relpos/checkpoint_eval.h"

#include <algorithm>
#include <tuple>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "train/checkpoint_contents.h"
#include "train/distributed.h"
#include "train/training_state.h"

namespace relpos::cli {

namespace {

// Model keys an evaluation may set: max_len and vocab_size (the layers and the checkpoint's
// shapes bound them), index_first (exact in evaluation), dtype (the same weights computed in
// f64 or f32; restore_module converts them), and those that leave what an evaluation
// computes as it was: dropout (off), fused / algorithm / chunk (the same function computed another
// way), *_init_std and redraw_interval (training only), SPE's eval_seed and num_realizations (its
// noise at evaluation).
bool eval_may_set(const std::string& key) {
  for (const char* free : {"model.max_len", "model.vocab_size", "model.index_first", "model.dtype"})
    if (key == free) return true;
  const std::string last = key.substr(key.rfind('.') + 1);
  for (const char* free : {"dropout", "fused", "algorithm", "chunk", "redraw_interval", "eval_seed",
                           "num_realizations"})
    if (last == free) return true;
  return last.ends_with("_dropout") || last.ends_with("_init_std");
}

// The trunk's sizes and head combiner, which checkpoint_config checks itself.
bool checked_apart(const std::string& key) {
  for (const char* size : {"num_layers", "num_heads", "model_dim", "qkv_dim", "mlp_dim",
                           "stacked_hidden", "head_combiner"})
    if (key == std::string("model.") + size) return true;
  return false;
}

// Refuses an override of a model key that would evaluate another model than the trained one
// (model.norm, model.attention.type, ...), naming it (a component's type before its other keys);
// a language model's context has eval.* keys.
void check_model_unchanged(const char* who, const RunConfig& trained, const RunConfig& config,
                           const std::string& checkpoint) {
  std::vector<ConfigChange> refused;
  for (ConfigChange& c : config_changes(trained.yaml, config.yaml, config.defaults))
    if (c.key.starts_with("model.") && !checked_apart(c.key) && !eval_may_set(c.key))
      refused.push_back(std::move(c));
  if (refused.empty()) return;
  const auto type = std::find_if(refused.begin(), refused.end(),
                                 [](const ConfigChange& c) { return c.key.ends_with(".type"); });
  const ConfigChange& c = type != refused.end() ? *type : refused.front();
  const std::string name = c.key.substr(6);
  RELPOS_CHECK(name != "mem_len" && name != "clamp_len" && name != "same_length", who,
               "{} {} is not the {} of the model '{}' holds: evaluation's is eval.{}", c.key,
               c.after, c.before, checkpoint, name);
  fail(who,
       "{} {} is not the {} of the model '{}' holds: a checkpoint runs as it was trained "
       "(train.init_from starts a new run from its parameters)",
       c.key, c.after, c.before, checkpoint);
}

}  // namespace

RunConfig checkpoint_config(const char* who, const CheckpointData& data,
                            const std::string& checkpoint,
                            const std::vector<std::string>& overrides) {
  const std::string& text = saved_config_text(data, checkpoint, who);
  // The stored configuration first, so its errors name the checkpoint and an override's do not.
  const RunConfig trained =
      naming_origin(checkpoint, [&] { return parse_config(text, checkpoint); });
  RunConfig config = parse_config(text, checkpoint, overrides);
  if (config.debug.detect_anomaly) set_detect_anomaly(true);  // evaluation and sampling too
  const ModelConfig& stored = trained.model;
  const ModelConfig& now = config.model;
  // model.max_len 0 was resolved from the training run's data and contexts (its position tables,
  // FastRPB's and skew's lengths, cosFormer's M): the model keeps it. Resolved anew from eval's
  // settings it would be another model (refused by the layers that bound their keys).
  if (stored.max_len == 0 && now.max_len == 0) {
    ModelConfig resolved = stored;
    complete_model_config(resolved, trained, 0, 0);
    config.model.max_len = resolved.max_len;
  }
  // Sizes as the model reads them: qkv_dim 0 is model_dim, stacked_hidden only shapes "stacked".
  const auto qkv = [](const ModelConfig& m) { return m.qkv_dim > 0 ? m.qkv_dim : m.model_dim; };
  const auto hidden = [](const ModelConfig& m) {
    return m.head_combiner == "stacked" ? m.stacked_hidden : 0;
  };
  RELPOS_CHECK(stored.head_combiner == now.head_combiner, who,
               "model.head_combiner {} is not the {} of the model '{}' holds", now.head_combiner,
               stored.head_combiner, checkpoint);
  for (const auto& [key, was, is] : {std::tuple{"num_layers", stored.num_layers, now.num_layers},
                                     {"num_heads", stored.num_heads, now.num_heads},
                                     {"model_dim", stored.model_dim, now.model_dim},
                                     {"qkv_dim", qkv(stored), qkv(now)},
                                     {"mlp_dim", stored.mlp_dim, now.mlp_dim},
                                     {"stacked_hidden", hidden(stored), hidden(now)}})
    RELPOS_CHECK(was == is, who,
                 "model.{} {} is not the {} of the model '{}' holds: a checkpoint runs with the "
                 "sizes it was trained with",
                 key, is, was, checkpoint);
  check_model_unchanged(who, trained, config, checkpoint);
  return config;
}

CheckpointEval load_for_eval(const char* who, const std::string& checkpoint,
                             const std::string& split, const std::vector<std::string>& overrides) {
  CheckpointEval e;
  e.data = read_checkpoint(checkpoint);
  e.step = position_counter(e.data, checkpoint, "step").value_or(0);
  e.config = checkpoint_config(who, e.data, checkpoint, overrides);
  const Device device = job_device(e.config.device, who);
  RELPOS_CHECK(split == "train" || split == "val" || split == "test", who,
               "unknown split '{}'; known: train, val, test", split);
  e.task = make_task(e.config, device, {split});
  naming_origin(checkpoint, [&] {
    e.task->check_checkpoint(e.data, checkpoint);
    restore_module(e.task->model(), e.data, false);
  });
  return e;
}

}  // namespace relpos::cli
