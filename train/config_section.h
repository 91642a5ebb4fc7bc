// ConfigSection: one mapping of a run configuration being read (train/config.cpp). Typed getters
// record each key they are asked for; rest() hands the keys nobody read to the component that
// owns them (a model type, a dataset) as Options; finish() refuses what is left, naming the key
// path and the keys valid there. A key the mapping leaves out is written into it with its default
// (the tree becomes the whole configuration), and every default is recorded by its path.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/options.h"
#include "train/config_defaults.h"

namespace relpos {

class ConfigSection {
  static constexpr const char* kWho = "config";

 public:
  // `node` is a mapping (or null, which becomes one) of the tree being read.
  ConfigSection(YAML::Node node, std::string path, std::shared_ptr<ConfigDefaults> defaults)
      : node_(std::move(node)), path_(std::move(path)), defaults_(std::move(defaults)) {
    RELPOS_CHECK(node_.IsNull() || node_.IsMap(), kWho, "'{}' must be a mapping, got {}{}", path_,
                 node_.IsScalar() ? "'" + node_.Scalar() + "'" : "a list",
                 node_.IsScalar() ? unknown_key_hint(node_.Scalar()) : "");
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

  // A key left out keeps `value` as its default, and the mapping gets it written in.
  template <typename T>
  void read(const std::string& key, T& value) {
    known_.insert(key);
    const YAML::Node v = child(key);
    if (!v || v.IsNull()) {
      resolve(key, scalar_text(value));
      return;
    }
    record_default(key, YAML::Node(scalar_text(value)));
    RELPOS_CHECK(v.IsScalar(), kWho, "{}: expected {}, got a {}", where(key), kind<T>(),
                 v.IsMap() ? "mapping" : "list");
    // The scalar parser of every component's options (core/options.h): a value means the same
    // wherever it is written.
    RELPOS_CHECK(parse_scalar(v.Scalar(), value), kWho, "{}: expected {}, got '{}'", where(key),
                 kind<T>(), v.Scalar());
  }

  // A list of strings; a key left out keeps `value` as its default, and the mapping gets it.
  void read(const std::string& key, std::vector<std::string>& value) {
    known_.insert(key);
    YAML::Node listed(YAML::NodeType::Sequence);
    for (const std::string& item : value) listed.push_back(item);
    record_default(key, listed);
    const YAML::Node v = child(key);
    if (!v || v.IsNull()) {
      node_[key] = listed;
      return;
    }
    RELPOS_CHECK(v.IsSequence(), kWho, "{}: expected a list like [a, b], got {}", where(key),
                 v.IsMap() ? "a mapping" : "'" + v.Scalar() + "'");
    value.clear();
    for (const auto& item : v) {
      RELPOS_CHECK(item.IsScalar(), kWho, "{}: list items must be strings", where(key));
      value.push_back(item.Scalar());
    }
  }

  // The value of a key that depends on other keys (a model type's trunk defaults, data.dir):
  // written when the mapping leaves the key out (or holds only the default read() wrote).
  void resolve(const std::string& key, const std::string& value) {
    record_default(key, YAML::Node(value));
    YAML::Node v = child(key);
    if (v && !v.IsNull() && !written_.count(key)) return;
    node_[key] = value;
    written_.insert(key);
  }

  // A mapping of scalars and scalar lists, kept as Options for the component to read.
  // `attention: softmax` is short for {type: softmax}; the tree is given the long form.
  void read_options(const std::string& key, Options& options) {
    known_.insert(key);
    YAML::Node v = child(key);
    if (!v || v.IsNull()) return;
    if (v.IsScalar()) {
      options.set("type", v.Scalar());
      YAML::Node mapping(YAML::NodeType::Map);
      mapping["type"] = v.Scalar();
      node_[key] = mapping;
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
      if (!known_.count(key)) add_option(key, where(key), entry.second, options);
    }
    return options;
  }

  // finish(), with the keys `rest` read counting as known: the error lists every valid key.
  void finish_with(const Options& rest) {
    for (const std::string& key : rest.asked()) known_.insert(key);
    finish();
  }

  // The mapping under `key` (an empty one when the file has none).
  ConfigSection section(const std::string& key) {
    known_.insert(key);
    if (!child(key) || child(key).IsNull()) node_[key] = YAML::Node(YAML::NodeType::Map);
    return ConfigSection(node_[key], where(key), defaults_);
  }

  // Every default recorded so far, by key path (of this mapping and every other of its tree).
  const ConfigDefaults& defaults() const { return *defaults_; }

  // The defaults `options` (read from this mapping's keys: a model type's or a dataset's own)
  // were read with, written in where the mapping leaves them out.
  void add_defaults(const Options& options) {
    add_option_defaults(node_, path_, options, *defaults_);
  }

  void finish() const {
    if (!node_ || node_.IsNull()) return;
    for (const auto& entry : node_) {
      const auto key = entry.first.as<std::string>();
      if (known_.count(key)) continue;
      throw Error(fmt::format("[{}] unknown key '{}'; valid keys{}: {}{}", kWho, where(key),
                              path_.empty() ? "" : " of '" + path_ + "'", fmt::join(known_, ", "),
                              unknown_key_hint(key)));
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
    if (value.IsNull()) {
      // `lr: ~` where no base sets lr (a base's is removed when the files and overrides are
      // merged, train/config_yaml.h): the component's default if it reads the key, an unknown
      // key if it does not.
      options.set_no_value(name);
      return;
    }
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
    if constexpr (std::is_floating_point_v<T>) return "a finite number";
    return "a string";
  }

  void record_default(const std::string& key, const YAML::Node& value) {
    (*defaults_)[where(key)] = yaml_flow_text(value);
  }

  YAML::Node node_;
  std::string path_;
  std::shared_ptr<ConfigDefaults> defaults_;
  std::set<std::string> known_;
  std::set<std::string> written_;  // keys read() or resolve() wrote in
};

// The trunk here (layers/models/model.h EncoderConfig); the type's own keys by the type.

}  // namespace relpos
