// ConfigSection: one mapping of a run configuration being read (train/config.cpp). Typed getters
// record each key they are asked for; rest() hands the keys nobody read to the component that
// owns them (a model type, a dataset) as Options; finish() refuses what is left, naming the key
// path and the keys valid there.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/options.h"

namespace relpos {

class ConfigSection {
  static constexpr const char* kWho = "config";

 public:
  ConfigSection(YAML::Node node, std::string path)
      : node_(std::move(node)), path_(std::move(path)) {
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
    // The scalar parser of every component's options (core/options.h): a value means the same
    // wherever it is written.
    RELPOS_CHECK(parse_scalar(v.Scalar(), value), kWho, "{}: expected {}, got '{}'", where(key),
                 kind<T>(), v.Scalar());
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

  ConfigSection section(const std::string& key) {
    known_.insert(key);
    return ConfigSection(child(key), where(key));
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

}  // namespace relpos
