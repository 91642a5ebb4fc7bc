// The scales of `relpos reproduce` read from configs/paper/scales.yaml (reproduce.h), how they
// apply to a cell, and the data they make. Every key is checked, so a typo in the file is an
// error naming its line, never a rule that silently matches nothing.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "datasets/dataset_registry.h"
#include "datasets/prepare.h"
#include "layers/attention/positional.h"
#include "tools/relpos/reproduce.h"
#include "tools/relpos/reproduce_runs.h"
#include "train/config_yaml.h"

namespace relpos::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "reproduce";

// What `when:` may test; the values a cell has for them are ScaleCell's.
const std::set<std::string> kWhenKeys = {"task",    "model",      "pe",
                                         "dataset", "positional", "schedule"};

struct Reader {
  std::string file;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    throw Error(fmt::format("[{}] '{}' line {}: {}", kWho, file, at.Mark().line + 1, what));
  }

  void only_keys(const YAML::Node& map, const std::set<std::string>& known,
                 const std::string& where) const {
    if (!map.IsMap()) fail(map, where + " must be a mapping");
    for (const auto& entry : map) {
      const std::string key = entry.first.Scalar();
      if (!known.count(key)) {
        std::string names;
        for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
        fail(entry.first, fmt::format("unknown key '{}' in {}; known: {}", key, where, names));
      }
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail(node, what + " must be a single value");
    return node.Scalar();
  }

  // A scalar or a list of scalars.
  std::vector<std::string> strings(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (node.IsSequence()) {
      for (const auto& item : node) out.push_back(scalar(item, what));
    } else {
      out.push_back(scalar(node, what));
    }
    return out;
  }

  ScaleRule rule(const YAML::Node& node, const std::string& where) const {
    only_keys(node, {"when", "set"}, where);
    ScaleRule r;
    r.line = node.Mark().line + 1;
    if (const YAML::Node when = node["when"]) {
      only_keys(when, kWhenKeys, where + ".when");
      for (const auto& entry : when)
        r.when[entry.first.Scalar()] =
            strings(entry.second, where + ".when." + entry.first.Scalar());
    }
    if (!node["set"] || !node["set"].IsSequence())
      fail(node, where + " needs set: a list of key.path=value overrides");
    for (const auto& item : node["set"]) {
      const std::string o = scalar(item, where + ".set");
      if (o.find('=') == std::string::npos || o.front() == '=')
        fail(item, fmt::format("'{}' in {}.set is not key.path=value", o, where));
      r.set.push_back(o);
    }
    return r;
  }

  // `earlier`: the scales above this one in the file, which `base:` may name.
  Scale scale(const std::string& name, const YAML::Node& node,
              const std::vector<Scale>& earlier) const {
    only_keys(node, {"about", "base", "seeds", "data", "figure3", "rules"}, "scale " + name);
    Scale s;
    if (const YAML::Node base = node["base"]) {
      const std::string base_name = scalar(base, "scale " + name + ".base");
      const auto it = std::find_if(earlier.begin(), earlier.end(),
                                   [&](const Scale& e) { return e.name == base_name; });
      if (it == earlier.end())
        fail(base, fmt::format("scale {}: base '{}' is not a scale above it", name, base_name));
      s = *it;
    }
    s.name = name;
    if (!node["about"]) fail(node, "scale " + name + " needs about: what it is for");
    s.about = scalar(node["about"], "scale " + name + ".about");
    if (const YAML::Node seeds = node["seeds"]) {
      only_keys(seeds, {"table1", "table2", "lm"}, "scale " + name + ".seeds");
      for (const auto& entry : seeds) {
        const int64_t n = entry.second.IsScalar() ? entry.second.as<int64_t>(0) : 0;
        if (n < 1) fail(entry.second, "seeds must be a positive integer");
        s.seeds[entry.first.Scalar()] = n;
      }
    }
    if (const YAML::Node data = node["data"]) {
      if (!data.IsMap()) fail(data, "scale " + name + ".data must be a mapping of datasets");
      for (const auto& entry : data) {
        const std::string where = "scale " + name + ".data." + entry.first.Scalar();
        only_keys(entry.second, {"folder", "prepare"}, where);
        ScaleData d;
        if (!entry.second["folder"]) fail(entry.second, where + " needs folder:");
        d.folder = scalar(entry.second["folder"], where + ".folder");
        const fs::path folder(d.folder);
        if (d.folder.empty() || folder.is_absolute() ||
            std::any_of(folder.begin(), folder.end(), [](const fs::path& p) { return p == ".."; }))
          fail(entry.second["folder"],
               fmt::format("{}.folder '{}' must be a folder under --data-dir (relative, no '..')",
                           where, d.folder));
        if (const YAML::Node prepare = entry.second["prepare"]) {
          if (!prepare.IsMap() && !prepare.IsNull())
            fail(prepare, where + ".prepare must be a mapping of `relpos data prepare` options");
          d.prepare = true;
          if (prepare.IsMap())
            for (const auto& option : prepare)
              d.options[option.first.Scalar()] = scalar(option.second, where + ".prepare");
        }
        s.data[entry.first.Scalar()] = d;
      }
    }
    if (const YAML::Node figure3 = node["figure3"]) {
      if (!figure3.IsSequence())
        fail(figure3, "scale " + name +
                          ".figure3 must be a list of `relpos bench attention` "
                          "arguments");
      s.figure3 = strings(figure3, "scale " + name + ".figure3");
    }
    if (const YAML::Node rules = node["rules"]) {
      if (!rules.IsSequence()) fail(rules, "scale " + name + ".rules must be a list");
      for (size_t i = 0; i < rules.size(); ++i)
        s.rules.push_back(rule(rules[i], fmt::format("scale {} rule {}", name, i + 1)));
    }
    return s;
  }
};

}  // namespace

std::vector<Scale> load_scales(const std::string& configs_dir) {
  const fs::path path = fs::path(configs_dir) / "paper" / "scales.yaml";
  RELPOS_CHECK(fs::is_regular_file(path), kWho, "cannot read '{}' (the scales): no such file",
               path.string());
  Reader reader{path.string()};
  const YAML::Node root = load_yaml_file(path.string());
  RELPOS_CHECK(root.IsDefined() && !root.IsNull(), kWho,
               "'{}' is empty: expected a mapping of scale names", path.string());
  if (!root.IsMap() || root.size() == 0) reader.fail(root, "expected a mapping of scale names");
  std::vector<Scale> scales;
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    scales.push_back(reader.scale(name, entry.second, scales));
  }
  return scales;
}

// Every value a rule's `when` tests is one a cell can have, so that a typo is an error and not
// a rule matching nothing: the task, model and pe of the cells of table1, table2 and lm; a
// registered dataset or positional type (or none); epochs or steps.
void check_rule_values(const std::vector<Scale>& scales, const std::string& configs_dir) {
  std::map<std::string, std::set<std::string>> known;
  for (const char* table : {"table1", "table2", "lm"})
    for (const Cell& c : table_cells(table, configs_dir)) {
      known["task"].insert(c.task);
      known["model"].insert(c.model);
      known["pe"].insert(c.pe);
    }
  for (const std::string& d : dataset_registry().names()) known["dataset"].insert(d);
  known["positional"] = {"none"};
  for (const std::string& p : positional_registry().names()) known["positional"].insert(p);
  known["schedule"] = {"epochs", "steps"};
  for (const Scale& scale : scales)
    for (const ScaleRule& rule : scale.rules)
      for (const auto& [key, values] : rule.when)
        for (const std::string& value : values)
          RELPOS_CHECK(known[key].count(value) == 1, kWho,
                       "'{}' line {}: scale {}: when.{} '{}' is no cell's {}; known: {}",
                       (fs::path(configs_dir) / "paper" / "scales.yaml").string(), rule.line,
                       scale.name, key, value, key, fmt::join(known[key], ", "));
}

const Scale& find_scale(const std::vector<Scale>& scales, const std::string& name) {
  std::string names;
  for (const Scale& s : scales) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw Error(fmt::format("[{}] unknown scale '{}'; known: {}", kWho, name, names));
}

ScaleCell scale_cell(const Cell& cell, const RunConfig& paper) {
  return {cell.task,
          cell.model,
          cell.pe,
          paper.data.dataset,
          paper.model.positional.get<std::string>("type", "none"),
          paper.train.epochs > 0 ? "epochs" : "steps"};
}

fs::path data_folder(const std::string& data_dir, const Scale& scale, const std::string& dataset) {
  const auto it = scale.data.find(dataset);
  return fs::path(data_dir) / (it == scale.data.end() ? dataset : it->second.folder);
}

void prepare_missing_data(const std::vector<Cell>& cells, const std::string& data_dir,
                          const Scale& scale) {
  std::set<std::string> datasets;
  for (const Cell& cell : cells) datasets.insert(cell_run_config(cell, scale, 0).data.dataset);
  for (const std::string& dataset : datasets) {
    const auto it = scale.data.find(dataset);
    const fs::path folder = data_folder(data_dir, scale, dataset);
    if (it == scale.data.end() || !it->second.prepare || fs::exists(folder)) continue;
    const Preparer prepare = find_preparer(dataset);
    RELPOS_CHECK(prepare, "reproduce", "scale {}: {} cannot be made by `relpos data prepare`",
                 scale.name, dataset);
    std::fprintf(stderr, "[reproduce] making %s for scale %s in %s\n", dataset.c_str(),
                 scale.name.c_str(), folder.string().c_str());
    PrepareRequest request{folder.string(), Options("scales.yaml " + scale.name + " " + dataset)};
    for (const auto& [key, value] : it->second.options) request.options.set(key, value);
    std::fprintf(stderr, "[reproduce]   %s\n", prepare(request).c_str());
    request.options.check_all_used();
  }
}

std::vector<std::string> scale_overrides(const Scale& scale, const ScaleCell& cell, int64_t seed) {
  const std::map<std::string, std::string> facts = {
      {"task", cell.task},       {"model", cell.model},           {"pe", cell.pe},
      {"dataset", cell.dataset}, {"positional", cell.positional}, {"schedule", cell.schedule}};
  std::vector<std::string> overrides{"seed=" + std::to_string(seed)};
  for (const ScaleRule& rule : scale.rules) {
    bool applies = true;
    for (const auto& [key, allowed] : rule.when)
      applies =
          applies && std::find(allowed.begin(), allowed.end(), facts.at(key)) != allowed.end();
    if (applies) overrides.insert(overrides.end(), rule.set.begin(), rule.set.end());
  }
  return overrides;
}

}  // namespace relpos::cli
