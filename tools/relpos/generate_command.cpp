// `relpos generate CHECKPOINT --prompt TEXT --tokens N [--temperature T] [--top-k K] [--top-p P]
// [--seed S] [--device cpu|cuda] [--set key=value]...`: samples text from a trained language model.
// The model is rebuilt from the checkpoint's configuration and its vocabulary (the bytes of the
// ids, saved with every LM checkpoint), runs in its evaluation context (eval.mem_len, ... where
// set), reads the prompt, then draws one character at a time from softmax(logits / T), restricted
// by --top-k and --top-p, carrying the memory from step to step; a model without memory re-reads
// the last max_len characters instead. The prompt, then each character as it is drawn, go to
// stdout; the same seed gives the same text.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>

#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/checkpoint_eval.h"
#include "tools/relpos/commands.h"
#include "train/checkpoint.h"
#include "train/checkpoint_contents.h"
#include "train/config.h"
#include "train/task.h"

namespace relpos::cli {

namespace {

struct GenerateArgs {
  std::string checkpoint, prompt, tokens, temperature = "1", top_k = "0", top_p = "1", seed = "0",
                                          device;
  std::vector<std::string> overrides;
};

// The sampling settings, checked; the checkpoint read and the text sampled by generate().
struct Sampling {
  int64_t tokens = 0;
  double temperature = 1;
  int64_t top_k = 0;  // 0: every id
  double top_p = 1;
  uint64_t seed = 0;
};

// The id of the next character: a draw from softmax(logits / T) restricted to the top_k most
// likely ids, then to the fewest of those whose probability reaches top_p (nucleus sampling,
// Holtzman et al. 2020), renormalized. exp((l - max) / T) stays finite for every T > 0.
int64_t sample(const Tensor& logits, const Sampling& s, Generator& gen, int64_t step) {
  const std::vector<double> l =
      logits.to(Device::cpu()).to(DType::f64).contiguous().to_vector<double>();  // [V]
  for (const double x : l)
    RELPOS_CHECK(std::isfinite(x), "generate", "the model's logits are not finite at symbol {}",
                 step);
  std::vector<int64_t> order(l.size());  // ids, most likely first (ties: the smaller id)
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
  const size_t kept =
      s.top_k > 0 ? std::min(order.size(), static_cast<size_t>(s.top_k)) : order.size();
  std::vector<double> p(kept);
  double total = 0;
  for (size_t i = 0; i < kept; ++i)
    total += p[i] = std::exp((l[order[i]] - l[order[0]]) / s.temperature);
  size_t nucleus = 0;
  double mass = 0;
  while (nucleus < kept && (nucleus == 0 || mass < s.top_p * total)) mass += p[nucleus++];
  const double u = rand({1}, gen, 0, 1, DType::f64).item() * mass;
  double walked = 0;
  for (size_t i = 0; i < nucleus; ++i) {
    walked += p[i];
    if (u < walked) return order[i];
  }
  return order[nucleus - 1];
}

Sampling parse_sampling(const GenerateArgs& a) {
  Sampling s;
  s.tokens = parse_number<int64_t>("generate", "--tokens", a.tokens);
  RELPOS_CHECK(s.tokens >= 0, "generate", "--tokens must be >= 0, got {}", s.tokens);
  s.temperature = parse_number<double>("generate", "--temperature", a.temperature);
  RELPOS_CHECK(s.temperature > 0 && std::isfinite(s.temperature), "generate",
               "--temperature must be a finite number > 0, got {} (the most likely symbol "
               "every step: --top-k 1)",
               a.temperature);
  s.top_k = parse_number<int64_t>("generate", "--top-k", a.top_k);
  RELPOS_CHECK(s.top_k >= 0, "generate", "--top-k must be >= 0 (0: every symbol), got {}", s.top_k);
  s.top_p = parse_number<double>("generate", "--top-p", a.top_p);
  RELPOS_CHECK(s.top_p > 0 && s.top_p <= 1, "generate", "--top-p must be in (0, 1], got {}",
               a.top_p);
  const int64_t seed = parse_number<int64_t>("generate", "--seed", a.seed);
  RELPOS_CHECK(seed >= 0, "generate", "--seed must be >= 0, got {}", seed);
  s.seed = static_cast<uint64_t>(seed);
  return s;
}

// The bytes of the ids of a language-model checkpoint (saved with it).
std::vector<uint8_t> vocabulary_of(const CheckpointData& data, const RunConfig& config,
                                   const std::string& checkpoint) {
  std::optional<std::vector<uint8_t>> vocabulary = saved_vocabulary(data, checkpoint);
  RELPOS_CHECK(vocabulary.has_value() &&
                   model_registry().at(config.model.type).task == TaskKind::language_modelling,
               "generate",
               "'{}' is not a language-model checkpoint (no vocabulary; model.type '{}')",
               checkpoint, config.model.type);
  return *vocabulary;
}

int generate(GenerateArgs& a) {
  const Sampling sampling = parse_sampling(a);
  const int64_t tokens = sampling.tokens;
  const std::string &checkpoint = a.checkpoint, &prompt = a.prompt;
  if (!a.device.empty()) a.overrides.push_back(text_override("device", a.device));
  check_keys_once("generate", a.overrides);
  const CheckpointData data = read_checkpoint(checkpoint);
  const RunConfig config = checkpoint_config("generate", data, checkpoint, a.overrides);
  const std::vector<uint8_t> symbols = vocabulary_of(data, config, checkpoint);
  std::vector<int64_t> id_of(256, -1);
  for (size_t i = 0; i < symbols.size(); ++i) id_of[symbols[i]] = static_cast<int64_t>(i);

  const Device device = Device::parse(config.device);
  RELPOS_CHECK(!device.is_cuda() || cuda_available(), "generate",
               "device cuda was asked for, but no CUDA device is visible (use --device cpu)");
  const auto model =
      saved_language_model(data, config, checkpoint, static_cast<int64_t>(symbols.size()));
  model->to(device);
  const LmContext trained = model->context();
  model->set_context({config.eval.mem_len.value_or(trained.mem_len),
                      config.eval.clamp_len.value_or(trained.clamp_len),
                      config.eval.same_length.value_or(trained.same_length)});
  model->eval();
  NoGradGuard no_grad;
  const AutocastGuard precision(products_dtype(config));  // as the model trained

  std::vector<int64_t> ids;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const auto byte = static_cast<uint8_t>(prompt[i]);
    RELPOS_CHECK(id_of[byte] >= 0, "generate",
                 "the prompt's byte {} (at {}) never occurs in the training text", byte, i);
    ids.push_back(id_of[byte]);
  }
  const bool memory = model->carries_state();
  // The longest input of one forward: what the model's positions cover (max_len where any
  // length is covered; checkpoint_config resolves it as the training run did), less the memory
  // in front of it (a prompt in segments of max_len overran FastRPB's table after the first).
  const int64_t covered = model->max_keys() > 0 ? model->max_keys() : config.model.max_len;
  const int64_t mem_len = model->context().mem_len;
  const int64_t window = memory ? covered - mem_len : covered;
  RELPOS_CHECK(window > 0, "generate",
               "{}'s positions cover {} keys and a memory of {} (eval.mem_len) fills them: no "
               "room is left for the text; use a shorter eval.mem_len",
               config.model.type, covered, mem_len);
  // Memory: the prompt in segments of at most `window`, then one character per step.
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
  Generator gen(sampling.seed);
  // Each character is written as it is drawn.
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t next = sample(last, sampling, gen, t);
    std::fputc(symbols[static_cast<size_t>(next)], stdout);
    std::fflush(stdout);
    ids.push_back(next);
    if (t + 1 == tokens) break;
    if (memory)
      run({next});
    else
      run({ids.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(ids.size(), window)),
           ids.end()});
  }
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace

void add_generate_command(Command app, int& status) {
  auto a = std::make_shared<GenerateArgs>();
  Command sub =
      app.add_subcommand("generate", "Samples text from a trained language model after a prompt.");
  sub.footer(
      "Samples N symbols from a trained language model after the prompt and prints the\n"
      "prompt, then each symbol as it is drawn. The symbols are bytes: a character outside\n"
      "ASCII takes several, and a sample may end inside one. --top-k 1 takes the most likely\n"
      "symbol every step; the same seed gives the same text.");
  sub.add_option("CHECKPOINT", a->checkpoint, "a language-model checkpoint").required();
  sub.add_option("--prompt", a->prompt, "the text the sample continues")
      .type_name("TEXT")
      .required();
  sub.add_option("--tokens", a->tokens, "symbols (bytes) to sample").type_name("N").required();
  sub.add_option("--temperature", a->temperature, "softmax temperature, > 0 (default 1)")
      .type_name("T");
  sub.add_option("--top-k", a->top_k, "draw from the K most likely symbols (default 0: all)")
      .type_name("K");
  sub.add_option("--top-p", a->top_p,
                 "draw from the fewest most likely symbols whose probability reaches P "
                 "(default 1)")
      .type_name("P");
  sub.add_option("--seed", a->seed, "the sampling seed (default 0)").type_name("S");
  sub.add_option("--device", a->device, "cpu or cuda (device)").type_name("cpu|cuda");
  sub.add_option("--set", a->overrides, "overrides a config key (repeatable)")
      .type_name("KEY.PATH=VALUE")
      .allow_extra_args(false);
  sub.callback([a, &status] { status = generate(*a); });
}

}  // namespace relpos::cli
