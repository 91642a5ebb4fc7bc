// `relpos generate CHECKPOINT --prompt TEXT --tokens N [--temperature T] [--seed S]
// [--device cpu|cuda] [--set key=value]...`: samples text from a trained language model. The
// model is rebuilt from the checkpoint's configuration and its vocabulary (the bytes of the ids,
// saved with every LM checkpoint), runs in its evaluation context (eval.mem_len, ... where set),
// reads the prompt, then draws one character at a time from softmax(logits / T) (T 0: the most
// likely one), carrying the memory from step to step; a model without memory re-reads the last
// max_len characters instead. The prompt and the sample go to stdout; the same seed gives the
// same text.
#include <cstdio>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/task.h"
#include "train/training_state.h"

namespace relpos::cli {

namespace {

constexpr const char* kGenerateUsage =
    "usage: relpos generate CHECKPOINT --prompt TEXT --tokens N [--temperature T] [--seed S]\n"
    "                       [--device cpu|cuda] [--set key.path=value]...\n"
    "Samples N characters from a trained language model after the prompt (temperature 1 by\n"
    "default; 0 takes the most likely character), and prints the prompt and the sample.\n";

// The id of the next character: argmax at temperature 0, else a draw from softmax(logits / T).
int64_t sample(const Tensor& logits, double temperature, Generator& gen) {
  const Tensor row = logits.to(Device::cpu()).to(DType::f64).contiguous();  // [V]
  if (temperature == 0) return static_cast<int64_t>(argmax(row, 0).item());
  const std::vector<double> p = softmax(mul_scalar(row, 1.0 / temperature), 0).to_vector<double>();
  const double u = rand({1}, gen, 0, 1, DType::f64).item();
  double total = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    total += p[i];
    if (u < total) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(p.size()) - 1;
}

}  // namespace

int generate_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kGenerateUsage, stdout);
    return 0;
  }
  std::string checkpoint, prompt;
  bool has_prompt = false;
  int64_t tokens = -1;
  double temperature = 1.0;
  uint64_t seed = 0;
  std::vector<std::string> overrides;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      RELPOS_CHECK(i + 1 < args.size(), "generate", "{} needs a value\n{}", a, kGenerateUsage);
      return args[++i];
    };
    if (a == "--prompt") {
      prompt = value();
      has_prompt = true;
    } else if (a == "--tokens") {
      tokens = parse_number<int64_t>("generate", a, value());
    } else if (a == "--temperature") {
      temperature = parse_number<double>("generate", a, value());
    } else if (a == "--seed") {
      const int64_t s = parse_number<int64_t>("generate", a, value());
      RELPOS_CHECK(s >= 0, "generate", "--seed must be >= 0, got {}", s);
      seed = static_cast<uint64_t>(s);
    } else if (a == "--device") {
      overrides.push_back("device=" + value());
    } else if (a == "--set") {
      overrides.push_back(value());
    } else if (a.rfind("--", 0) == 0) {
      throw Error(fmt::format("[generate] unknown option '{}'\n{}", a, kGenerateUsage));
    } else if (checkpoint.empty()) {
      checkpoint = a;
    } else {
      throw Error(
          fmt::format("[generate] one checkpoint expected, got '{}' and '{}'", checkpoint, a));
    }
  }
  RELPOS_CHECK(!checkpoint.empty(), "generate", "no checkpoint given\n{}", kGenerateUsage);
  RELPOS_CHECK(has_prompt && !prompt.empty(), "generate", "--prompt TEXT is required (non-empty)");
  RELPOS_CHECK(tokens >= 0, "generate", "--tokens N is required (N >= 0)");
  RELPOS_CHECK(temperature >= 0 && std::isfinite(temperature), "generate",
               "--temperature must be >= 0, got {}", temperature);

  const CheckpointData data = read_checkpoint(checkpoint);
  const auto text = data.texts.find("config");
  RELPOS_CHECK(text != data.texts.end(), "generate", "'{}' holds no configuration", checkpoint);
  const RunConfig config = parse_config(text->second, checkpoint, overrides);
  Tensor vocabulary;
  for (const auto& [name, t] : data.state)
    if (name == "vocabulary") vocabulary = t;
  RELPOS_CHECK(vocabulary.defined() &&
                   model_registry().at(config.model.type).task == TaskKind::language_modelling,
               "generate",
               "'{}' is not a language-model checkpoint (no vocabulary; model.type '{}')",
               checkpoint, config.model.type);
  const std::vector<uint8_t> symbols = vocabulary.to_vector<uint8_t>();
  std::vector<int64_t> id_of(256, -1);
  for (size_t i = 0; i < symbols.size(); ++i) id_of[symbols[i]] = static_cast<int64_t>(i);

  const Device device = Device::parse(config.device);
  RELPOS_CHECK(!device.is_cuda() || cuda_available(), "generate",
               "device cuda was asked for, but no CUDA device is visible (use --device cpu)");
  ModelConfig model_config = config.model;
  complete_model_config(model_config, config, static_cast<int64_t>(symbols.size()), 0);
  Generator init(config.seed);
  auto model = make_language_model(model_config, init);
  restore_module(*model, data);
  model->to(device);
  const LmContext trained = model->context();
  model->set_context({config.eval.mem_len.value_or(trained.mem_len),
                      config.eval.clamp_len.value_or(trained.clamp_len),
                      config.eval.same_length.value_or(trained.same_length)});
  model->eval();
  NoGradGuard no_grad;

  std::vector<int64_t> ids;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const auto byte = static_cast<uint8_t>(prompt[i]);
    RELPOS_CHECK(id_of[byte] >= 0, "generate",
                 "the prompt's byte {} (at {}) never occurs in the training text", byte, i);
    ids.push_back(id_of[byte]);
  }
  const bool memory = model->carries_state();
  const int64_t window = model_config.max_len;  // the longest input without memory
  // Memory: the prompt in segments of at most max_len, then one character per step.
  LmState state;
  Tensor last;  // the logits of the latest position [V]
  auto run = [&](const std::vector<int64_t>& chunk) {
    const Tensor input =
        Tensor::from_vector(chunk, {1, static_cast<int64_t>(chunk.size())}).to(device);
    LmOutput out = model->forward(input, memory ? state : LmState{});
    if (memory) state = std::move(out.state);
    last = out.logits.value().select(0, 0).select(0, static_cast<int64_t>(chunk.size()) - 1);
  };
  if (memory) {
    for (size_t at = 0; at < ids.size(); at += static_cast<size_t>(window))
      run({ids.begin() + static_cast<std::ptrdiff_t>(at),
           ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + window))});
  } else {
    run({ids.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(ids.size(), window)), ids.end()});
  }
  Generator gen(seed);
  std::string out = prompt;
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t next = sample(last, temperature, gen);
    out.push_back(static_cast<char>(symbols[static_cast<size_t>(next)]));
    ids.push_back(next);
    if (t + 1 == tokens) break;
    if (memory)
      run({next});
    else
      run({ids.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(ids.size(), window)),
           ids.end()});
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace relpos::cli
