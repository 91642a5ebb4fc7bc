// One full training step (forward, cross-entropy, backward, optimizer update) of a config's model
// on random inputs of its data shape: the relpos side of tools/bench/run_train_step_bench.sh and
// run_lm_step_bench.sh, whose PyTorch twins are bench_train_step_torch.py and
// bench_lm_step_torch.py. Classifiers: a batch of pixel sequences (the MNIST family's sizes).
// Language models: a batch of tgt_len random characters after a memory of mem_len (the steady
// state of training), gradient clipping as the config asks. Prints one JSON object; with
// --profile N, also the profiler's tables of N more steps on stderr (train/profile_report.h).
// Options: relpos_bench_train_step --help.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/cpu_threads.h"
#include "core/error.h"
#include "core/json.h"
#include "core/ops.h"
#include "tools/bench/bench_common.h"
#include "tools/command_line/command_line.h"
#include "train/clip.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/profile_report.h"
#include "train/task.h"
#include "train/task_data.h"
#include "train/trainer.h"

using namespace relpos;

namespace {

// A step of the model the config describes, and what the JSON line reports about it.
struct Step {
  std::function<Tensor()> run;  // forward, loss, backward, update: returns the loss
  int64_t length = 0;           // tokens per sequence
  int64_t params = 0;
  std::shared_ptr<const Module> model;
};

// The profiler's tables of `updates` more steps; `plain_s`: a step's seconds unprofiled.
std::string profile_steps(const Step& step, Device device, int64_t updates, double plain_s) {
  ProfileRun run;
  run.updates = updates;
  run.warmup = 0;  // the timing before warmed up
  run.plain_update_s = plain_s;
  run.device = device;
  return profile_updates(*step.model, run, [&] { step.run(); });
}

Step classifier_step(const RunConfig& config, int64_t batch, Device device) {
  // Sizes as an image dataset gives them: 256 pixel ids and 10 classes (other classification
  // datasets differ only in the sizes of the embedding and the head).
  ModelConfig model_config = config.model;
  complete_model_config(model_config, config, 256, 10);
  Generator gen(config.seed);
  auto model = make_classifier(model_config, gen);
  model->to(device);
  model->train();
  auto optimizer = make_optimizer(model->named_parameters(), config.optimizer);

  const int64_t content = content_length(config.data);
  const SpecialTokens special = model->special_tokens();
  const int64_t length = content + (special.cls_id >= 0) + (special.sep_id >= 0);
  Tensor tokens = Tensor::empty({batch, length}, DType::i64);
  Generator data_gen(1);
  const Tensor pixels = rand({batch, length}, data_gen, 0.0, 256.0);
  for (int64_t i = 0; i < batch * length; ++i)
    tokens.data<int64_t>()[i] = static_cast<int64_t>(pixels.data<float>()[i]);
  for (int64_t b = 0; b < batch; ++b) {
    if (special.cls_id >= 0) tokens.data<int64_t>()[b * length] = special.cls_id;
    if (special.sep_id >= 0) tokens.data<int64_t>()[b * length + length - 1] = special.sep_id;
  }
  Tensor labels = Tensor::empty({batch}, DType::i64);
  for (int64_t b = 0; b < batch; ++b) labels.data<int64_t>()[b] = b % 10;
  ClassifierInputs in;
  in.tokens = tokens.to(device);
  in.key_mask = ones({batch, length}, DType::u8).to(device);
  const Tensor target = labels.to(device);
  auto run = [model, optimizer, in, target, products = products_dtype(config)]() {
    fit_threads_to_free_cores();  // as the trainer does before each step
    const AutocastGuard precision(products);
    Var loss = cross_entropy(model->forward(in), target);
    loss.backward();
    optimizer->step();
    optimizer->zero_grad();
    return loss.value();
  };
  return {run, length, model->num_parameters(), model};
}

Step language_model_step(const RunConfig& config, int64_t batch, int64_t vocab, Device device) {
  ModelConfig model_config = config.model;
  complete_model_config(model_config, config, vocab, 0);
  Generator gen(config.seed);
  auto model = make_language_model(model_config, gen);
  model->to(device);
  model->train();
  auto optimizer = make_optimizer(model->named_parameters(), config.optimizer);
  const int64_t len = config.data.tgt_len;
  Generator data_gen(1);
  auto random_ids = [&](int64_t n) {
    return cast(rand({batch, n}, data_gen, 0, static_cast<double>(vocab), DType::f64), DType::i64)
        .to(device);
  };
  LmState memory;
  const int64_t mem_len = model->context().mem_len;
  if (mem_len > 0) {  // a full memory, as every segment after the first has
    NoGradGuard no_grad;
    memory = model->forward(random_ids(mem_len), {}).state;
  }
  const Tensor inputs = random_ids(len), targets = random_ids(len).reshape({batch * len});
  const double clip = config.train.clip_grad_norm;
  auto run = [model, optimizer, memory, inputs, targets, clip, batch, len, vocab,
              products = products_dtype(config)]() {
    fit_threads_to_free_cores();  // as the trainer does before each step
    const AutocastGuard precision(products);
    const LmOutput out = model->forward(inputs, memory);
    Var loss = cross_entropy(reshape(out.logits, {batch * len, vocab}), targets);
    loss.backward();
    if (clip > 0) clip_grad_norm(optimizer->params(), clip);
    optimizer->step();
    optimizer->zero_grad();
    return loss.value();
  };
  return {run, len, model->num_parameters(), model};
}

}  // namespace

int main(int argc, char** argv) {
  cli::Program program(
      "Time and peak memory of one training step of a config's model on random inputs.",
      "relpos_bench_train_step");
  cli::Command app = program.root();
  std::string config_path, device_name = "cpu";
  std::vector<std::string> overrides;
  int64_t batch = 8, vocab = 204;
  double min_time = 3;
  int64_t profile_updates = 0;
  app.add_option("--config", config_path, "the run's YAML config").required();
  app.add_option("--set", overrides, "overrides a config key (repeatable)")
      .type_name("KEY.PATH=VALUE")
      .allow_extra_args(false);
  app.add_option("--device", device_name, "cpu or cuda").capture_default_str();
  app.add_option("--batch", batch, "batch size").check_positive().capture_default_str();
  app.add_option("--vocab", vocab, "a language model's vocabulary")
      .check_positive()
      .capture_default_str();
  app.add_option("--min-time", min_time, "seconds of timing")
      .check_non_negative()
      .capture_default_str();
  app.add_option("--profile", profile_updates,
                 "then N steps under the profiler: their per-op and per-module table on stderr")
      .check_positive()
      .type_name("N");
  return program.run(argc, argv, [&] {
    overrides.push_back("device=" + device_name);
    const RunConfig config = load_config(config_path, overrides);
    const Device device = Device::parse(config.device);
    const Step step = is_language_modelling(config.data)
                          ? language_model_step(config, batch, vocab, device)
                          : classifier_step(config, batch, device);
    const bench::Timing t = bench::time_call(step.run, device, min_time, 5);
    const int64_t peak = bench::peak_bytes_of([&] { step.run(); }, device);
    const Json line = {{"impl", "relpos"},
                       {"config", config.name},
                       {"batch", batch},
                       {"length", step.length},
                       {"device", device_name},
                       {"median_ms", bench::rounded_ms(t.median_ms)},
                       {"min_ms", bench::rounded_ms(t.min_ms)},
                       {"runs", t.runs},
                       {"peak_bytes", peak},
                       {"params", step.params}};
    std::printf("%s\n", json_line(line).c_str());
    if (profile_updates > 0)
      std::fputs(profile_steps(step, device, profile_updates, t.median_ms / 1e3).c_str(), stderr);
    return 0;
  });
}
