// parameter_chosen / init_parameters (init_from.h).
#include "train/init_from.h"

#include <fnmatch.h>

#include <fmt/ranges.h>

#include <map>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

namespace {

constexpr const char* kWho = "train";

bool glob_matches(const std::string& glob, const std::string& name) {
  return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

// The glob of a pattern ("!glob" leaves out) and whether it leaves out.
std::pair<std::string, bool> parse_pattern(const std::string& pattern) {
  const bool leaves_out = !pattern.empty() && pattern[0] == '!';
  return {leaves_out ? pattern.substr(1) : pattern, leaves_out};
}

}  // namespace

bool parameter_chosen(const std::string& name, const std::vector<std::string>& patterns) {
  bool chosen = false;
  for (const std::string& pattern : patterns) {
    const auto [glob, leaves_out] = parse_pattern(pattern);
    if (glob_matches(glob, name)) chosen = !leaves_out;
  }
  return chosen;
}

std::vector<std::string> init_parameters(Module& module, const CheckpointData& data,
                                         const std::vector<std::string>& patterns,
                                         const std::string& source) {
  const std::vector<std::pair<std::string, Var>> named = module.named_parameters();
  for (const std::string& pattern : patterns) {
    const auto [glob, leaves_out] = parse_pattern(pattern);
    RELPOS_CHECK(!glob.empty(), kWho, "train.init_params: an empty pattern");
    bool matches = false;
    for (const auto& entry : named) matches = matches || glob_matches(glob, entry.first);
    RELPOS_CHECK(matches, kWho,
                 "train.init_params: '{}' matches no parameter of the model (names like '{}')",
                 pattern, named.empty() ? "" : named.front().first);
  }
  std::map<std::string, const Tensor*> saved;
  for (const auto& [name, tensor] : data.params) saved[name] = &tensor;
  std::vector<std::pair<Var, Tensor>> updates;
  std::vector<std::string> taken;
  for (const auto& [name, param] : named) {
    if (!parameter_chosen(name, patterns)) continue;
    const auto it = saved.find(name);
    RELPOS_CHECK(it != saved.end(), kWho,
                 "train.init_from '{}' has no parameter '{}'; leave it out with "
                 "train.init_params: [\"*\", \"!{}\"]",
                 source, name, name);
    const Tensor& value = *it->second;
    RELPOS_CHECK(value.shape() == param.value().shape(), kWho,
                 "train.init_from '{}': parameter '{}' has shape {} there, the model's is {}; "
                 "leave it out with train.init_params: [\"*\", \"!{}\"]",
                 source, name, shape_str(value.shape()), shape_str(param.value().shape()), name);
    updates.emplace_back(param, cast(value, param.dtype()).to(param.device()).clone());
    taken.push_back(name);
  }
  for (auto& [param, value] : updates) param.set_value(value);
  return taken;
}

}  // namespace relpos
