// The defaults of a run configuration (train/config.h): every key a file leaves out is written
// into the resolved tree with the value it takes there, and recorded by its key path, so
// config.yaml is the whole configuration and a resumed run can tell what a key that an older
// checkpoint left out meant.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "core/options.h"
#include "train/config.h"

namespace relpos {

// A node as one line of flow YAML: "0.1", "[14, 14]", "{type: softmax}".
std::string yaml_flow_text(const YAML::Node& node);

// The defaults `options` were read with (Options::defaults), recorded under `path` and written
// into `mapping` where it leaves them out.
void add_option_defaults(YAML::Node mapping, const std::string& path, const Options& options,
                         ConfigDefaults& defaults);

}  // namespace relpos
