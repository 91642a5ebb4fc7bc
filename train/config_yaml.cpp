// The YAML of a run configuration before it is read (train/config_yaml.h): files with their
// bases merged, overrides applied, repeated keys refused.
#include "train/config_yaml.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "config";

// Refuses a mapping that repeats a key (YAML keeps only the last one), naming both lines.
void check_unique_keys(const YAML::Node& node, const std::string& origin) {
  if (node.IsSequence())
    for (const auto& item : node) check_unique_keys(item, origin);
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const int line = entry.first.Mark().line + 1;
    const auto [it, fresh] = first_line.emplace(key, line);
    RELPOS_CHECK(fresh, kWho, "'{}' line {}: key '{}' repeats the one on line {}", origin, line,
                 key, it->second);
    check_unique_keys(entry.second, origin);
  }
}

// A config file's text: a regular file, or a pipe such as /dev/stdin; at most kMaxConfigBytes,
// so a device that never ends (/dev/zero) is refused rather than read forever.
constexpr std::streamsize kMaxConfigBytes = 16 << 20;

std::string read_config_text(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  RELPOS_CHECK(fs::exists(status), kWho, "cannot read '{}': no such file", path.string());
  RELPOS_CHECK(!fs::is_directory(status), kWho, "cannot read '{}': it is a folder, not a file",
               path.string());
  std::ifstream in(path, std::ios::binary);
  RELPOS_CHECK(in.good(), kWho, "cannot read '{}': {}", path.string(), std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    RELPOS_CHECK(static_cast<std::streamsize>(text.size()) <= kMaxConfigBytes, kWho,
                 "'{}' is longer than {} MB: not a configuration", path.string(),
                 kMaxConfigBytes >> 20);
  }
  RELPOS_CHECK(!in.bad(), kWho, "cannot read '{}': {}", path.string(), std::strerror(errno));
  return text;
}

YAML::Node load_yaml_file(const fs::path& path) {
  const std::string text = read_config_text(path);
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("[{}] '{}' line {}: {}", kWho, path.string(), e.mark.line + 1, e.msg));
  }
  check_unique_keys(node, path.string());
  return node;
}

// `over` merged into a copy of `base`: mappings key by key (recursively), anything else replaced.
YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& entry : over) {
    const auto key = entry.first.as<std::string>();
    out[key] = out[key] ? merged(out[key], entry.second) : YAML::Clone(entry.second);
  }
  return out;
}

// The file with its `base:` chain resolved (a cycle is an error).
YAML::Node load_with_bases(const fs::path& path, std::vector<fs::path>& chain) {
  // A pipe (/dev/stdin) has no canonical name: its absolute path stands in.
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  if (ec) canonical = fs::absolute(path, ec);
  for (const auto& seen : chain)
    RELPOS_CHECK(seen != canonical, kWho, "'{}' includes itself through base:", path.string());
  chain.push_back(canonical);
  YAML::Node node = load_yaml_file(path);
  if (node.IsNull()) node = YAML::Node(YAML::NodeType::Map);
  RELPOS_CHECK(node.IsMap(), kWho, "'{}' must be a mapping at the top level", path.string());
  YAML::Node result(YAML::NodeType::Map);
  if (const YAML::Node bases = node["base"]) {
    std::vector<std::string> files;
    const auto file_name = [&](const YAML::Node& b) {
      RELPOS_CHECK(b.IsScalar(), kWho,
                   "'{}' line {}: base must be a file name or a list of file names, got a {}",
                   path.string(), b.Mark().line + 1, b.IsMap() ? "mapping" : "list");
      return b.Scalar();
    };
    if (bases.IsSequence())
      for (const auto& b : bases) files.push_back(file_name(b));
    else
      files.push_back(file_name(bases));
    for (const auto& file : files)
      result = merged(result, load_with_bases(path.parent_path() / file, chain));
    node.remove("base");
  }
  chain.pop_back();
  return merged(result, node);
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& text) {
  const auto eq = text.find('=');
  RELPOS_CHECK(eq != std::string::npos && eq > 0, kWho,
               "override '{}' must look like key.path=value", text);
  const std::string path = text.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error(
        fmt::format("[{}] override '{}': the value is not valid YAML: {}", kWho, text, e.msg));
  }
  check_unique_keys(value, "override '" + text + "'");
  std::vector<std::string> keys;
  for (size_t start = 0;;) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  // Walk by reassignment-free references: yaml-cpp nodes are handles into one tree.
  std::vector<YAML::Node> nodes{root};
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    RELPOS_CHECK(!keys[i].empty(), kWho, "override '{}': empty key in '{}'", text, path);
    YAML::Node child = nodes.back()[keys[i]];
    if (!child || child.IsNull()) {
      nodes.back()[keys[i]] = YAML::Node(YAML::NodeType::Map);
      child = nodes.back()[keys[i]];
    }
    RELPOS_CHECK(child.IsMap(), kWho, "override '{}': '{}' is not a mapping", text, keys[i]);
    nodes.push_back(child);
  }
  RELPOS_CHECK(!keys.back().empty(), kWho, "override '{}': empty key in '{}'", text, path);
  nodes.back()[keys.back()] = value;
}

// A mapping being read: typed getters record each key, finish() refuses the rest.

YAML::Node load_config_yaml(const std::string& path) {
  std::vector<fs::path> chain;
  return load_with_bases(path, chain);
}

YAML::Node parse_config_yaml(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("[{}] '{}' line {}: {}", kWho, origin, e.mark.line + 1, e.msg));
  }
  check_unique_keys(root, origin);
  RELPOS_CHECK(root.IsMap(), kWho, "'{}' must be a mapping at the top level", origin);
  return root;
}

}  // namespace relpos
