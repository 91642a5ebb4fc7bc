// Writing a configuration's defaults into its resolved tree (train/config_defaults.h).
#include "train/config_defaults.h"

namespace relpos {

std::string yaml_flow_text(const YAML::Node& node) {
  YAML::Emitter text;
  text << YAML::Flow << node;
  return text.c_str();
}

void add_option_defaults(YAML::Node mapping, const std::string& path, const Options& options,
                         ConfigDefaults& defaults) {
  for (const auto& [key, fallback] : options.defaults()) {
    YAML::Node value;
    if (fallback.is_list) {
      value = YAML::Node(YAML::NodeType::Sequence);
      for (const std::string& item : fallback.list) value.push_back(item);
    } else {
      value = YAML::Node(fallback.scalar);
    }
    defaults[path.empty() ? key : path + "." + key] = yaml_flow_text(value);
    if (!options.has(key)) mapping[key] = value;
  }
}

}  // namespace relpos
