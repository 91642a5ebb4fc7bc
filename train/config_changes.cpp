// config_changes and trajectory_changes (train/config.h): the keys whose values differ between
// two resolved configs, and of them the ones that change what a run computes.
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

#include "train/config.h"
#include "train/config_defaults.h"

namespace relpos {
namespace {

// Every leaf of `node` as "a.b.c" -> its YAML text (lists and scalars whole); a key with no
// value (an older checkpoint's `mem_len: ~`) is left out, as it means none.
void flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (node.IsNull()) return;
  if (node.IsMap()) {
    for (const auto& entry : node)
      flatten(entry.second,
              prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar(), out);
    return;
  }
  out[prefix] = yaml_flow_text(node);
}

// `attention: softmax` is short for {type: softmax}: a scalar where the other config has a
// mapping is compared as that mapping's type.
void expand_short_forms(std::map<std::string, std::string>& config,
                        const std::map<std::string, std::string>& other) {
  std::vector<std::string> short_forms;
  for (const auto& [key, value] : config)
    if (other.count(key + ".type") && !other.count(key)) short_forms.push_back(key);
  for (const std::string& key : short_forms) {
    config[key + ".type"] = config.at(key);
    config.erase(key);
  }
}

// The eval.* keys are not among them: they change the validation figures, and so which weights
// are the best and where patience stops the run.
bool changes_nothing(const std::string& key) {
  // init_from and init_params act once, when a run starts: a resumed run reads its checkpoint.
  for (const char* free :
       {"name", "device", "train.out", "train.log_every", "train.save_every", "train.keep_last",
        "train.init_from", "train.init_params", "data.dir", "data.prefetch"})
    if (key == free) return true;
  return key.rfind("debug.", 0) == 0;
}

}  // namespace

std::vector<ConfigChange> config_changes(const std::string& before, const std::string& after,
                                         const ConfigDefaults& after_defaults) {
  std::map<std::string, std::string> a, b;
  flatten(YAML::Load(before), "", a);
  flatten(YAML::Load(after), "", b);
  expand_short_forms(a, b);
  expand_short_forms(b, a);
  std::set<std::string> keys;
  for (const auto& [key, value] : a) keys.insert(key);
  for (const auto& [key, value] : b) keys.insert(key);
  std::vector<ConfigChange> out;
  for (const std::string& key : keys) {
    const std::string was = a.count(key)                ? a.at(key)
                            : after_defaults.count(key) ? after_defaults.at(key)
                                                        : "<none>";
    const std::string now = b.count(key) ? b.at(key) : "<none>";
    if (was != now) out.push_back({key, was, now});
  }
  return out;
}

std::vector<std::string> trajectory_changes(const std::string& before, const std::string& after,
                                            const ConfigDefaults& after_defaults) {
  std::vector<std::string> out;
  for (const ConfigChange& c : config_changes(before, after, after_defaults))
    if (!changes_nothing(c.key))
      out.push_back(fmt::format("{}: {} -> {}", c.key, c.before, c.after));
  return out;
}

}  // namespace relpos
