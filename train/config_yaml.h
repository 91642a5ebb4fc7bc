// The YAML of a run configuration before it is read into a RunConfig (train/config.h): a file
// with its `base:` chain merged mapping by mapping (the file's own keys win; a cycle is an error),
// `--set` overrides applied; repeated keys, keys that are not plain names, more than one document,
// NUL bytes and aliases expanding past a million values refused, with errors naming the file and
// line.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace relpos {

// The one YAML document of the file at `path` (a regular file or a pipe, at most 16 MB), checked
// as above; any YAML file relpos reads (configs/paper/scales.yaml too).
YAML::Node load_yaml_file(const std::string& path);
// The file at `path` with its bases merged (regular files).
YAML::Node load_config_yaml(const std::string& path);
// Resolved YAML text (e.g. a checkpoint's) as a tree; `origin` names it in errors.
YAML::Node parse_config_yaml(const std::string& text, const std::string& origin);
// "a.b.c=value" applied to the tree; the value is parsed as YAML (`[14, 14]` is a list).
void apply_override(YAML::Node& root, const std::string& text);

}  // namespace relpos
