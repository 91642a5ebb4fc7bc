// trajectory_changes (train/config.h): the keys whose values differ between two resolved configs,
// leaving out the ones that do not change what a run computes.
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

#include "train/config.h"

namespace relpos {
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

}  // namespace relpos
