// YAML -> RunConfig (train/config.h): bases merged, overrides applied, every mapping read through
// a Section that knows its path and refuses keys nobody asked for.
#include "train/config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "datasets/dataset_registry.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "config";

// Refuses a mapping that repeats a key (YAML keeps only the last one), naming both lines.
void check_unique_keys(const YAML::Node& node, const std::string& origin) {
  if (node.IsSequence())
    for (const auto& item : node) check_unique_keys(item, origin);
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const int line = entry.first.Mark().line + 1;
    const auto [it, fresh] = first_line.emplace(key, line);
    RELPOS_CHECK(fresh, kWho, "'{}' line {}: key '{}' repeats the one on line {}", origin, line,
                 key, it->second);
    check_unique_keys(entry.second, origin);
  }
}

// A config file's text: a regular file, or a pipe such as /dev/stdin; at most kMaxConfigBytes,
// so a device that never ends (/dev/zero) is refused rather than read forever.
constexpr std::streamsize kMaxConfigBytes = 16 << 20;

std::string read_config_text(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  RELPOS_CHECK(fs::exists(status), kWho, "cannot read '{}': no such file", path.string());
  RELPOS_CHECK(!fs::is_directory(status), kWho, "cannot read '{}': it is a folder, not a file",
               path.string());
  std::ifstream in(path, std::ios::binary);
  RELPOS_CHECK(in.good(), kWho, "cannot read '{}': {}", path.string(), std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    RELPOS_CHECK(static_cast<std::streamsize>(text.size()) <= kMaxConfigBytes, kWho,
                 "'{}' is longer than {} MB: not a configuration", path.string(),
                 kMaxConfigBytes >> 20);
  }
  RELPOS_CHECK(!in.bad(), kWho, "cannot read '{}': {}", path.string(), std::strerror(errno));
  return text;
}

YAML::Node load_yaml_file(const fs::path& path) {
  const std::string text = read_config_text(path);
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("[{}] '{}' line {}: {}", kWho, path.string(), e.mark.line + 1, e.msg));
  }
  check_unique_keys(node, path.string());
  return node;
}

// `over` merged into a copy of `base`: mappings key by key (recursively), anything else replaced.
YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& entry : over) {
    const auto key = entry.first.as<std::string>();
    out[key] = out[key] ? merged(out[key], entry.second) : YAML::Clone(entry.second);
  }
  return out;
}

// The file with its `base:` chain resolved (a cycle is an error).
YAML::Node load_with_bases(const fs::path& path, std::vector<fs::path>& chain) {
  // A pipe (/dev/stdin) has no canonical name: its absolute path stands in.
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  if (ec) canonical = fs::absolute(path, ec);
  for (const auto& seen : chain)
    RELPOS_CHECK(seen != canonical, kWho, "'{}' includes itself through base:", path.string());
  chain.push_back(canonical);
  YAML::Node node = load_yaml_file(path);
  if (node.IsNull()) node = YAML::Node(YAML::NodeType::Map);
  RELPOS_CHECK(node.IsMap(), kWho, "'{}' must be a mapping at the top level", path.string());
  YAML::Node result(YAML::NodeType::Map);
  if (const YAML::Node bases = node["base"]) {
    std::vector<std::string> files;
    const auto file_name = [&](const YAML::Node& b) {
      RELPOS_CHECK(b.IsScalar(), kWho,
                   "'{}' line {}: base must be a file name or a list of file names, got a {}",
                   path.string(), b.Mark().line + 1, b.IsMap() ? "mapping" : "list");
      return b.Scalar();
    };
    if (bases.IsSequence())
      for (const auto& b : bases) files.push_back(file_name(b));
    else
      files.push_back(file_name(bases));
    for (const auto& file : files)
      result = merged(result, load_with_bases(path.parent_path() / file, chain));
    node.remove("base");
  }
  chain.pop_back();
  return merged(result, node);
}

// "a.b.c=value" applied to the tree; the value is parsed as YAML.
void apply_override(YAML::Node& root, const std::string& text) {
  const auto eq = text.find('=');
  RELPOS_CHECK(eq != std::string::npos && eq > 0, kWho,
               "override '{}' must look like key.path=value", text);
  const std::string path = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error(
        fmt::format("[{}] override '{}': the value is not valid YAML: {}", kWho, text, e.msg));
  }
  check_unique_keys(value, "override '" + text + "'");
  std::vector<std::string> keys;
  for (size_t start = 0;;) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  // Walk by reassignment-free references: yaml-cpp nodes are handles into one tree.
  std::vector<YAML::Node> nodes{root};
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    RELPOS_CHECK(!keys[i].empty(), kWho, "override '{}': empty key in '{}'", text, path);
    YAML::Node child = nodes.back()[keys[i]];
    if (!child || child.IsNull()) {
      nodes.back()[keys[i]] = YAML::Node(YAML::NodeType::Map);
      child = nodes.back()[keys[i]];
    }
    RELPOS_CHECK(child.IsMap(), kWho, "override '{}': '{}' is not a mapping", text, keys[i]);
    nodes.push_back(child);
  }
  RELPOS_CHECK(!keys.back().empty(), kWho, "override '{}': empty key in '{}'", text, path);
  nodes.back()[keys.back()] = value;
}

// A mapping being read: typed getters record each key, finish() refuses the rest.
class Section {
 public:
  Section(YAML::Node node, std::string path) : node_(std::move(node)), path_(std::move(path)) {
    RELPOS_CHECK(!node_ || node_.IsNull() || node_.IsMap(), kWho, "'{}' must be a mapping", path_);
  }

  // An optional key keeps its value unset when the mapping lacks it.
  template <typename T>
  void read(const std::string& key, std::optional<T>& value) {
    const YAML::Node v = child(key);
    if (!v || v.IsNull()) {
      known_.insert(key);
      return;
    }
    T read_value{};
    read(key, read_value);
    value = read_value;
  }

  template <typename T>
  void read(const std::string& key, T& value) {
    known_.insert(key);
    const YAML::Node v = child(key);
    if (!v || v.IsNull()) return;
    RELPOS_CHECK(v.IsScalar(), kWho, "{}: expected {}, got a {}", where(key), kind<T>(),
                 v.IsMap() ? "mapping" : "list");
    try {
      value = v.as<T>();
    } catch (const YAML::Exception&) {
      throw Error(
          fmt::format("[{}] {}: expected {}, got '{}'", kWho, where(key), kind<T>(), v.Scalar()));
    }
  }

  // A list of integers such as `[14, 14]`.
  void read(const std::string& key, std::vector<int64_t>& values) {
    known_.insert(key);
    const YAML::Node v = child(key);
    if (!v || v.IsNull()) return;
    RELPOS_CHECK(v.IsSequence(), kWho, "{}: expected a list of integers like [14, 14], got {}",
                 where(key), v.IsMap() ? "a mapping" : "'" + v.Scalar() + "'");
    std::vector<int64_t> read_values;
    for (const YAML::Node& item : v) {
      const auto bad = [&] {
        return Error(
            fmt::format("[{}] {}: expected a list of integers like [14, 14], got an item "
                        "'{}'",
                        kWho, where(key), item.IsScalar() ? item.Scalar() : "(a list)"));
      };
      if (!item.IsScalar()) throw bad();
      try {
        read_values.push_back(item.as<int64_t>());
      } catch (const YAML::Exception&) {
        throw bad();
      }
    }
    values = read_values;
  }

  // A mapping of scalars and scalar lists, kept as Options for the component to read.
  void read_options(const std::string& key, Options& options) {
    known_.insert(key);
    const YAML::Node v = child(key);
    if (!v || v.IsNull()) return;
    if (v.IsScalar()) {  // `attention: softmax` is short for {type: softmax}
      options.set("type", v.Scalar());
      return;
    }
    RELPOS_CHECK(v.IsMap(), kWho, "{}: expected a mapping like {{type: ...}}, got a list",
                 where(key));
    for (const auto& entry : v) {
      const auto name = entry.first.as<std::string>();
      add_option(name, where(key) + "." + name, entry.second, options);
    }
  }

  // The keys nobody has read yet, as Options named `name` in errors, for the component that owns
  // them (a model type, a dataset); finish_with() then refuses the ones it did not read.
  Options rest(const std::string& name) {
    Options options(name);
    if (!node_ || node_.IsNull()) return options;
    for (const auto& entry : node_) {
      const auto key = entry.first.as<std::string>();
      if (known_.count(key)) continue;
      // A null value (`--set model.mem_len=null`) is no value, as for the keys read here.
      if (entry.second.IsNull())
        known_.insert(key);
      else
        add_option(key, where(key), entry.second, options);
    }
    return options;
  }

  // finish(), with the keys `rest` read counting as known: the error lists every valid key.
  void finish_with(const Options& rest) {
    for (const std::string& key : rest.asked()) known_.insert(key);
    finish();
  }

  Section section(const std::string& key) {
    known_.insert(key);
    return Section(child(key), where(key));
  }

  void finish() const {
    if (!node_ || node_.IsNull()) return;
    for (const auto& entry : node_) {
      const auto key = entry.first.as<std::string>();
      if (known_.count(key)) continue;
      throw Error(fmt::format("[{}] unknown key '{}'; valid keys{}: {}", kWho, where(key),
                              path_.empty() ? "" : " of '" + path_ + "'", fmt::join(known_, ", ")));
    }
  }

 private:
  YAML::Node child(const std::string& key) const {
    if (!node_ || node_.IsNull()) return YAML::Node();
    return node_[key];
  }
  std::string where(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  // `value` under `name` in `options`; `path` names it in errors.
  static void add_option(const std::string& name, const std::string& path, const YAML::Node& value,
                         Options& options) {
    if (value.IsSequence()) {
      std::vector<std::string> list;
      for (const auto& item : value) {
        RELPOS_CHECK(item.IsScalar(), kWho, "{}: list items must be scalars", path);
        list.push_back(item.Scalar());
      }
      options.set_list(name, list);
    } else {
      RELPOS_CHECK(value.IsScalar(), kWho, "{}: nested mappings are not options", path);
      options.set(name, value.Scalar());
    }
  }
  template <typename T>
  static const char* kind() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_integral_v<T>) return "an integer";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    return "a string";
  }

  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

// The trunk here (layers/models/model.h EncoderConfig); the type's own keys by the type.
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
  RELPOS_CHECK(d.tgt_len >= 0, kWho, "data.tgt_len must be >= 0, got {}", d.tgt_len);
  RELPOS_CHECK(d.batch_size > 0 && d.eval_batch_size >= 0, kWho,
               "data.batch_size must be positive, got {}", d.batch_size);
  RELPOS_CHECK(d.max_len >= 0 && d.train_limit >= 0 && d.eval_limit >= 0 && d.prefetch >= 0, kWho,
               "data.max_len, train_limit, eval_limit and prefetch must be >= 0");
  if (d.dir.empty()) d.dir = "data/" + d.dataset;
}

void read_train(Section s, TrainConfig& t) {
  s.read("steps", t.steps);
  s.read("epochs", t.epochs);
  s.read("eval_every", t.eval_every);
  s.read("log_every", t.log_every);
  s.read("clip_grad_norm", t.clip_grad_norm);
  s.read("accumulate", t.accumulate);
  s.read("patience", t.patience);
  s.read("metric", t.metric);
  s.read("out", t.out);
  s.finish();
  RELPOS_CHECK((t.steps > 0) != (t.epochs > 0), kWho,
               "set exactly one of train.steps and train.epochs to a positive number (got {} and "
               "{})",
               t.steps, t.epochs);
  RELPOS_CHECK(t.eval_every >= 0 && t.log_every > 0 && t.accumulate >= 1 && t.patience >= 0 &&
                   t.clip_grad_norm >= 0,
               kWho,
               "train.eval_every, patience, clip_grad_norm must be >= 0, log_every and "
               "accumulate >= 1");
  const std::set<std::string> metrics = {"", "accuracy", "macro_f1", "loss", "bpc", "perplexity"};
  RELPOS_CHECK(metrics.count(t.metric), kWho,
               "train.metric must be accuracy, macro_f1 or loss (classification), bpc, loss or "
               "perplexity (language modelling), got '{}'",
               t.metric);
}

RunConfig read_run(YAML::Node root, const std::string& origin) {
  RunConfig c;
  Section s(root, "");
  s.read("name", c.name);
  if (c.name.empty()) {
    c.name = fs::path(origin).stem().string();
    root["name"] = c.name;  // so the resolved text names the run wherever it is parsed again
  }
  read_model(s.section("model"), c.model);
  read_data(s.section("data"), c.data);
  s.read_options("optimizer", c.optimizer);
  s.read_options("schedule", c.schedule);
  read_train(s.section("train"), c.train);
  Section eval = s.section("eval");
  eval.read("max_batches", c.eval.max_batches);
  eval.read("tgt_len", c.eval.tgt_len);
  eval.read("mem_len", c.eval.mem_len);
  eval.read("clamp_len", c.eval.clamp_len);
  eval.read("same_length", c.eval.same_length);
  eval.finish();
  RELPOS_CHECK(c.eval.max_batches >= 0 && c.eval.tgt_len.value_or(1) > 0 &&
                   c.eval.mem_len.value_or(0) >= 0 && c.eval.clamp_len.value_or(0) >= 0,
               kWho,
               "eval.max_batches, mem_len and clamp_len must be >= 0 and eval.tgt_len positive");
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
  RELPOS_CHECK(c.optimizer.has("type"), kWho,
               "optimizer.type is required (sgd, adam, adamw, "
               "lra_adam)");
  if (c.train.out.empty()) c.train.out = "runs/" + c.name;
  YAML::Emitter out;
  out << root;
  c.yaml = std::string(out.c_str()) + "\n";
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

namespace {

// Every leaf of `node` as "a.b.c" -> its YAML text (lists and scalars whole).
void flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node)
      flatten(entry.second,
              prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar(), out);
    return;
  }
  YAML::Emitter text;
  text << YAML::Flow << node;
  out[prefix] = text.c_str();
}

bool changes_nothing(const std::string& key) {
  for (const char* free :
       {"name", "device", "train.out", "train.log_every", "data.dir", "data.prefetch"})
    if (key == free) return true;
  return key.rfind("eval.", 0) == 0 || key.rfind("debug.", 0) == 0;
}

}  // namespace

std::vector<std::string> trajectory_changes(const std::string& before, const std::string& after) {
  std::map<std::string, std::string> a, b;
  flatten(YAML::Load(before), "", a);
  flatten(YAML::Load(after), "", b);
  std::set<std::string> keys;
  for (const auto& [key, value] : a) keys.insert(key);
  for (const auto& [key, value] : b) keys.insert(key);
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    if (changes_nothing(key)) continue;
    const std::string was = a.count(key) ? a.at(key) : "<none>";
    const std::string now = b.count(key) ? b.at(key) : "<none>";
    if (was != now) out.push_back(fmt::format("{}: {} -> {}", key, was, now));
  }
  return out;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::vector<fs::path> chain;
  return finish(load_with_bases(path, chain), path, overrides);
}

RunConfig parse_config(const std::string& yaml_text, const std::string& origin,
                       const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("[{}] '{}' line {}: {}", kWho, origin, e.mark.line + 1, e.msg));
  }
  check_unique_keys(root, origin);
  RELPOS_CHECK(root.IsMap(), kWho, "'{}' must be a mapping at the top level", origin);
  return finish(root, origin, overrides);
}

}  // namespace relpos
