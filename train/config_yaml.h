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
// The file at `path` with its bases merged (regular files): mappings key by key, a null value
// removing the value a base gave the key (kept, with no value, where no base gives one).
YAML::Node load_config_yaml(const std::string& path);
// Resolved YAML text that relpos wrote (a checkpoint's) as a tree; `origin` names it in errors.
// Keys it holds with no value are dropped: they mean none, and older versions wrote them where a
// null had removed a base's key (a transformer_lm's `mem_len: ~`), which no reader knows.
YAML::Node parse_config_yaml(const std::string& text, const std::string& origin);
// The same, of the file at `path` (a run's config.yaml).
YAML::Node load_written_config_yaml(const std::string& path);
// "a.b.c=value" applied to the tree; the value is parsed as YAML (`[14, 14]` is a list). A null
// value removes the key's value; where it has none, the key stays with no value.
void apply_override(YAML::Node& root, const std::string& text);

}  // namespace relpos
