// YAML -> RunConfig (train/config.h): the file and its bases (train/config_yaml.h), every
// mapping read through a ConfigSection that knows its path and refuses keys nobody asked for;
// the model type's and the dataset's own keys are read by their registries.
#include "train/config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/json.h"
#include "datasets/dataset_registry.h"
#include "datasets/lm_batches.h"
#include "train/config_section.h"
#include "train/config_yaml.h"
#include "train/optimizer.h"
#include "train/schedule.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "config";
using Section = ConfigSection;

void read_model(Section s, ModelConfig& m) {
  s.read("type", m.type);
  s.read("vocab_size", m.vocab_size);
  s.read("max_len", m.max_len);
  s.read("num_layers", m.num_layers);
  s.read("num_heads", m.num_heads);
  s.read("model_dim", m.model_dim);
  s.read("qkv_dim", m.qkv_dim);
  s.read("mlp_dim", m.mlp_dim);
  s.read("dropout", m.dropout);
  s.read("attention_dropout", m.attention_dropout);
  s.read("activation", m.activation);
  s.read("norm", m.norm);
  s.read("projection_bias", m.projection_bias);
  s.read("positions", m.positions);
  s.read_options("attention", m.attention);
  s.read_options("positional", m.positional);
  s.read("head_combiner", m.head_combiner);
  s.read("stacked_hidden", m.stacked_hidden);
  s.read("index_first", m.index_first);
  std::string dtype = "f32";
  s.read("dtype", dtype);
  RELPOS_CHECK(dtype == "f32" || dtype == "f64", kWho, "model.dtype must be f32 or f64, got '{}'",
               dtype);
  m.dtype = dtype == "f64" ? DType::f64 : DType::f32;
  m.own = s.rest("model");
  check_model_keys(m);
  s.finish_with(m.own);
  s.add_defaults(m.own);
  // "" trunk fields take the type's defaults.
  const ModelConfig typed = with_model_defaults(m);
  s.resolve("activation", typed.activation);
  s.resolve("norm", typed.norm);
  s.resolve("positions", typed.positions);
}

// Refuses `value` of `key` below `least` (NaN too), naming both.
template <typename T>
void require_at_least(const char* key, T value, T least) {
  RELPOS_CHECK(value >= least, kWho, "{} must be >= {}, got {}", key, least, value);
}

// The keys every dataset has; the rest belong to the dataset, whose registry entry reads and
// checks them (datasets/dataset_registry.h).
void read_data(Section s, DataConfig& d) {
  s.read("dataset", d.dataset);
  s.read("dir", d.dir);
  s.read("max_len", d.max_len);
  s.read("batch_size", d.batch_size);
  s.read("eval_batch_size", d.eval_batch_size);
  s.read("train_limit", d.train_limit);
  s.read("eval_limit", d.eval_limit);
  s.read("prefetch", d.prefetch);
  s.read("drop_last", d.drop_last);
  s.read("tgt_len", d.tgt_len);
  RELPOS_CHECK(!d.dataset.empty(), kWho, "data.dataset is required ({})", dataset_names());
  d.own = s.rest("data");
  dataset_registry().at(d.dataset, kWho).make(d.own);  // reads and checks its own keys
  s.finish_with(d.own);
  s.add_defaults(d.own);
  require_at_least<int64_t>("data.tgt_len", d.tgt_len, 0);
  require_at_least<int64_t>("data.batch_size", d.batch_size, 1);
  require_at_least<int64_t>("data.eval_batch_size (0: batch_size)", d.eval_batch_size, 0);
  require_at_least<int64_t>("data.max_len", d.max_len, 0);
  require_at_least<int64_t>("data.train_limit", d.train_limit, 0);
  require_at_least<int64_t>("data.eval_limit", d.eval_limit, 0);
  require_at_least<int64_t>("data.prefetch", d.prefetch, 0);
  if (d.dir.empty()) d.dir = "data/" + d.dataset;
  s.resolve("dir", d.dir);
}

void read_train(Section& s, TrainConfig& t) {
  s.read("steps", t.steps);
  s.read("epochs", t.epochs);
  s.read("eval_every", t.eval_every);
  s.read("log_every", t.log_every);
  s.read("clip_grad_norm", t.clip_grad_norm);
  s.read("accumulate", t.accumulate);
  s.read("precision", t.precision);
  s.read("patience", t.patience);
  s.read("metric", t.metric);
  s.read("out", t.out);
  s.read("save_every", t.save_every);
  s.read("keep_last", t.keep_last);
  s.read("init_from", t.init_from);
  s.read("init_params", t.init_params);
  s.finish();
  require_at_least<int64_t>("train.steps", t.steps, 0);
  require_at_least<int64_t>("train.epochs", t.epochs, 0);
  RELPOS_CHECK((t.steps > 0) != (t.epochs > 0), kWho,
               "set exactly one of train.steps and train.epochs to a positive number (got {} and "
               "{})",
               t.steps, t.epochs);
  require_at_least<int64_t>("train.eval_every", t.eval_every, 0);
  require_at_least<int64_t>("train.log_every", t.log_every, 1);
  require_at_least<int64_t>("train.accumulate", t.accumulate, 1);
  require_at_least<int64_t>("train.patience", t.patience, 0);
  require_at_least<double>("train.clip_grad_norm (0: off)", t.clip_grad_norm, 0);
  RELPOS_CHECK(t.precision == "f32" || t.precision == "bf16", kWho,
               "train.precision must be f32 or bf16, got '{}'", t.precision);
  RELPOS_CHECK(t.save_every >= 0 && t.keep_last >= 0, kWho,
               "train.save_every and train.keep_last must be >= 0 (0: off), got {} and {}",
               t.save_every, t.keep_last);
  RELPOS_CHECK(t.keep_last == 0 || t.save_every > 0, kWho,
               "train.keep_last ({}) keeps step checkpoints, which train.save_every writes; set "
               "train.save_every too",
               t.keep_last);
  RELPOS_CHECK(!t.init_params.empty(), kWho,
               "train.init_params is empty; list the parameters to take from train.init_from "
               "(default [\"*\"]: all)");
  const std::set<std::string> metrics = {"", "accuracy", "macro_f1", "loss", "bpc", "perplexity"};
  RELPOS_CHECK(metrics.count(t.metric), kWho,
               "train.metric must be accuracy, macro_f1 or loss (classification), bpc, loss or "
               "perplexity (language modelling), got '{}'",
               t.metric);
}

// The optimizer and the schedule read and check their own keys at load, so a bad one stops the
// load and not the run; the trainer builds them again over the model's parameters. An
// epoch-counted run's length waits for its data, so its schedule is checked here as if the run
// were long enough for any warmup; a total_steps below the run's is the trainer's to refuse (a
// checkpoint's configuration is read by eval too, whose run is over).
void check_optimizer_and_schedule(const RunConfig& c) {
  RELPOS_CHECK(c.optimizer.has("type"), kWho, "optimizer.type is required ({})",
               fmt::join(optimizer_registry().names(), ", "));
  const auto optimizer = make_optimizer(std::vector<Var>{}, c.optimizer);
  const int64_t run_steps = c.train.steps > 0 ? c.train.steps : std::numeric_limits<int32_t>::max();
  make_schedule(c.schedule, optimizer->lr(), run_steps, false);
}

// A mapping of `root` by its path, made when the tree has none.
YAML::Node mapping_at(YAML::Node root, const std::string& path) {
  YAML::Node node = root;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string key = path.substr(start, dot - start);
    if (!node[key] || node[key].IsNull()) node[key] = YAML::Node(YAML::NodeType::Map);
    node.reset(node[key]);
    start = dot + 1;
  }
  return node;
}

// The defaults of every component mapping, as far as they have been read (complete_config).
void add_component_defaults(YAML::Node root, RunConfig& c) {
  const std::pair<const char*, const Options*> components[] = {
      {"model", &c.model.own},
      {"model.attention", &c.model.attention},
      {"model.positional", &c.model.positional},
      {"data", &c.data.own},
      {"optimizer", &c.optimizer},
      {"schedule", &c.schedule}};
  for (const auto& [path, options] : components)
    if (!options->defaults().empty())
      add_option_defaults(mapping_at(root, path), path, *options, c.defaults);
}

// One style whatever the files wrote, so the text a run writes parses back to itself: mappings
// in blocks, lists in brackets.
void set_canonical_style(YAML::Node node) {
  if (node.IsSequence()) node.SetStyle(YAML::EmitterStyle::Flow);
  if (!node.IsMap()) return;
  node.SetStyle(YAML::EmitterStyle::Block);
  for (const auto& entry : node) set_canonical_style(entry.second);
}

std::string yaml_text(YAML::Node root) {
  set_canonical_style(root);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

RunConfig read_run(YAML::Node root, const std::string& origin) {
  RunConfig c;
  Section s(root, "", std::make_shared<ConfigDefaults>());
  s.read("name", c.name);
  if (c.name.empty()) c.name = fs::path(origin).stem().string();
  // The run's folder under runs/ (train.out sets any other): `..` or a path would leave runs/.
  RELPOS_CHECK(
      c.name != "." && c.name != ".." && c.name.find('/') == std::string::npos &&
          std::none_of(c.name.begin(), c.name.end(),
                       [](char ch) { return std::iscntrl(static_cast<unsigned char>(ch)); }),
      kWho,
      "name '{}' must be one folder name (no '/' or control characters, not '.' or "
      "'..'): it names the run's folder runs/NAME; train.out puts a run anywhere",
      c.name);
  // summary.json and metrics name the run: JSON holds UTF-8 text only.
  const std::string not_utf8 = utf8_error(c.name);
  RELPOS_CHECK(not_utf8.empty(), kWho, "name is not UTF-8 text: {}", not_utf8);
  s.resolve("name", c.name);  // so the resolved text names the run wherever it is parsed again
  read_model(s.section("model"), c.model);
  read_data(s.section("data"), c.data);
  s.read_options("optimizer", c.optimizer);
  s.read_options("schedule", c.schedule);
  Section train = s.section("train");
  read_train(train, c.train);
  Section eval = s.section("eval");
  eval.read("max_batches", c.eval.max_batches);
  eval.read("tgt_len", c.eval.tgt_len);
  eval.read("mem_len", c.eval.mem_len);
  eval.read("clamp_len", c.eval.clamp_len);
  eval.read("same_length", c.eval.same_length);
  eval.read("layout", c.eval.layout);
  eval.finish();
  lm_layout_from_name(c.eval.layout, "eval.layout");
  require_at_least<int64_t>("eval.max_batches", c.eval.max_batches, 0);
  require_at_least<int64_t>("eval.tgt_len", c.eval.tgt_len.value_or(1), 1);
  require_at_least<int64_t>("eval.mem_len", c.eval.mem_len.value_or(0), 0);
  require_at_least<int64_t>("eval.clamp_len", c.eval.clamp_len.value_or(0), 0);
  s.read("device", c.device);
  RELPOS_CHECK(c.device == "cpu" || c.device == "cuda", kWho,
               "device must be cpu or cuda, got '{}'", c.device);
  int64_t seed = 0;
  s.read("seed", seed);
  RELPOS_CHECK(seed >= 0, kWho, "seed must be >= 0, got {}", seed);
  c.seed = static_cast<uint64_t>(seed);
  Section debug = s.section("debug");
  debug.read("detect_anomaly", c.debug.detect_anomaly);
  debug.finish();
  s.finish();
  check_optimizer_and_schedule(c);
  // f64 products are never rounded (autograd/autocast.h): bf16 would change nothing, silently.
  RELPOS_CHECK(c.train.precision != "bf16" || c.model.dtype == DType::f32, kWho,
               "train.precision bf16 rounds an f32 model's products; model.dtype is {}",
               dtype_name(c.model.dtype));
  if (c.train.out.empty()) c.train.out = "runs/" + c.name;
  train.resolve("out", c.train.out);
  c.defaults = s.defaults();
  add_component_defaults(root, c);
  c.yaml = yaml_text(root);
  return c;
}

RunConfig finish(YAML::Node root, const std::string& origin,
                 const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) apply_override(root, o);
  try {
    return read_run(root, origin);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("[{}] '{}': {}", kWho, origin, e.msg));
  }
}

}  // namespace

void complete_config(RunConfig& config) {
  YAML::Node root = YAML::Load(config.yaml);
  add_component_defaults(root, config);
  config.yaml = yaml_text(root);
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return finish(load_config_yaml(path), path, overrides);
}

RunConfig parse_config(const std::string& yaml_text, const std::string& origin,
                       const std::vector<std::string>& overrides) {
  return finish(parse_config_yaml(yaml_text, origin), origin, overrides);
}

RunConfig load_written_config(const std::string& path) {
  return finish(load_written_config_yaml(path), path, {});
}

}  // namespace relpos
