// The YAML of a run configuration before it is read (train/config_yaml.h): files with their
// bases merged, overrides applied, repeated keys refused.
#include "train/config_yaml.h"

#include <yaml-cpp/depthguard.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "train/config.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "config";

// A configuration's tree as relpos reads it: keys that are plain names, each once per mapping,
// and at most kMaxValues values once aliases are expanded (a file of nested aliases would
// otherwise expand to billions). `where` names the text ("'file.yaml'", "override 'a=b'").
constexpr int64_t kMaxValues = 1'000'000;

// A key or value with a control byte (a quoted escape such as "\0" or "\n") would cut or break
// the one-line messages that quote it, and names no file or setting a user means.
void check_printable(const YAML::Node& scalar, const std::string& where) {
  const std::string& text = scalar.Scalar();
  const auto control = std::find_if(text.begin(), text.end(), [](const char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
  });
  RELPOS_CHECK(control == text.end(), kWho,
               "{} line {}: a key or value holds the control byte 0x{:02x}; settings are "
               "printable text",
               where, scalar.Mark().line + 1, static_cast<unsigned char>(*control));
}

// A YAML tag (`!!str 5`, `!!float 1`, `!custom`) would be dropped unread: yaml-cpp keeps it
// beside the value, and relpos reads every value by its key's type. yaml-cpp tags an untagged
// node "?" (plain) or "!" (quoted).
void check_untagged(const YAML::Node& node, const std::string& where) {
  const std::string& tag = node.Tag();
  RELPOS_CHECK(tag.empty() || tag == "?" || tag == "!", kWho,
               "{} line {}: the YAML tag '{}' is not read (each setting has one type); write the "
               "value plainly",
               where, node.Mark().line + 1, tag);
}

void check_tree(const YAML::Node& node, const std::string& where, int64_t& values) {
  RELPOS_CHECK(++values <= kMaxValues, kWho,
               "{} line {}: more than {} values (aliases expanded): not a configuration", where,
               node.Mark().line + 1, kMaxValues);
  check_untagged(node, where);
  if (node.IsScalar()) check_printable(node, where);
  if (node.IsSequence())
    for (const auto& item : node) check_tree(item, where, values);
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& entry : node) {
    const int line = entry.first.Mark().line + 1;
    RELPOS_CHECK(entry.first.IsScalar(), kWho, "{} line {}: a key must be a plain name, not a {}",
                 where, line, entry.first.IsMap() ? "mapping" : "list or nothing");
    check_untagged(entry.first, where);
    check_printable(entry.first, where);
    const std::string key = entry.first.Scalar();
    RELPOS_CHECK(key != "<<", kWho,
                 "{} line {}: YAML merge keys (<<) are not read; write the keys out, or build on "
                 "another file with 'base:'",
                 where, line);
    const auto [it, fresh] = first_line.emplace(key, line);
    RELPOS_CHECK(fresh, kWho, "{} line {}: key '{}' repeats the one on line {}", where, line, key,
                 it->second);
    check_tree(entry.second, where, values);
  }
}

// The line where a second YAML document of `text` begins (0: none): a "---" marker after content,
// or content after a "..." marker. Scanned by line: yaml-cpp's LoadAll loops for ever on some
// malformed texts (a document starting with ',').
int second_document_line(const std::string& text) {
  const auto blank = [](const std::string& s) {
    const size_t at = s.find_first_not_of(" \t\r");
    return at == std::string::npos || s[at] == '#';
  };
  bool content = false, ended = false;
  int line = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    ++line;
    const bool marker = (l.rfind("---", 0) == 0 || l.rfind("...", 0) == 0) &&
                        (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (marker && l[0] == '-' && (content || ended)) return line;
    if (marker) {
      ended = l[0] == '.';
      content = content || (!ended && !blank(l.substr(3)));
    } else if (!blank(l) && l[0] != '%') {
      if (ended) return line;
      content = true;
    }
  }
  return 0;
}

// What a YAML syntax error on `line` (1-based) meant when that line or the one before indents
// with a tab, which YAML forbids and yaml-cpp reports as "illegal map value" and the like.
std::string tab_hint(const std::string& text, int line) {
  std::istringstream in(text);
  std::string l;
  for (int at = 1; at <= line && std::getline(in, l); ++at) {
    const size_t indent = l.find_first_not_of(" \t");
    if (at >= line - 1 && indent != std::string::npos &&
        l.substr(0, indent).find('\t') != std::string::npos)
      return fmt::format(" (line {} indents with a tab; YAML indents with spaces)", at);
  }
  return "";
}

// The one YAML document of `text`, checked as above; errors name `where`.
YAML::Node load_document(const std::string& text, const std::string& where) {
  const size_t nul = text.find('\0');
  RELPOS_CHECK(nul == std::string::npos, kWho, "{} byte {}: a NUL byte; a configuration is text",
               where, nul);
  const int second = second_document_line(text);
  RELPOS_CHECK(second == 0, kWho,
               "{} line {}: a second YAML document (after ---); a configuration is one", where,
               second);
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp says only "bad file"
    throw Error(fmt::format("[{}] {} line {}: nested deeper than the YAML reader allows", kWho,
                            where, e.mark.line + 1));
  } catch (const YAML::Exception& e) {
    const bool says_tab = e.msg.find("tab") != std::string::npos;
    throw Error(fmt::format("[{}] {} line {}: {}{}", kWho, where, e.mark.line + 1, e.msg,
                            says_tab ? "" : tab_hint(text, e.mark.line + 1)));
  }
  int64_t values = 0;
  check_tree(node, where, values);
  return node;
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

// Sets `key` of `mapping` to `value`; a null value removes a value the mapping holds (`mem_len:
// null` takes the default again) and is kept only where there is none to remove, as a key
// written with no value, which its reader then takes for its default or refuses as unknown.
void set_or_remove(YAML::Node mapping, const std::string& key, const YAML::Node& value) {
  const YAML::Node held = std::as_const(mapping)[key];
  if (value.IsNull() && held && !held.IsNull())
    mapping.remove(key);
  else
    mapping[key] = value;
}

// Removes every key of the mappings of `node` that holds no value (null).
void remove_keys_without_value(YAML::Node node) {
  if (!node.IsMap()) return;
  std::vector<std::string> empty;
  for (const auto& entry : node)
    if (entry.second.IsNull())
      empty.push_back(entry.first.Scalar());
    else
      remove_keys_without_value(entry.second);
  for (const std::string& key : empty) node.remove(key);
}

// `over` merged into a copy of `base`: mappings key by key (recursively), anything else replaced.
YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& entry : over) {
    const auto key = entry.first.as<std::string>();
    const YAML::Node held = std::as_const(out)[key];
    set_or_remove(out, key, held ? merged(held, entry.second) : YAML::Clone(entry.second));
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
  // A base is a file (a FIFO would block for ever); the top file may be a pipe (/dev/stdin).
  RELPOS_CHECK(chain.empty() || fs::is_regular_file(fs::status(path, ec)) || !fs::exists(path, ec),
               kWho, "'{}': base '{}' is not a regular file", chain.back().string(), path.string());
  chain.push_back(canonical);
  YAML::Node node = load_yaml_file(path.string());
  if (node.IsNull()) node = YAML::Node(YAML::NodeType::Map);
  RELPOS_CHECK(node.IsMap(), kWho, "'{}' must be a mapping at the top level", path.string());
  YAML::Node result(YAML::NodeType::Map);
  if (const YAML::Node bases = node["base"]) {
    std::vector<std::string> files;
    const auto file_name = [&](const YAML::Node& b) {
      RELPOS_CHECK(b.IsScalar(), kWho,
                   "'{}' line {}: base must be a file name or a list of file names, got {}",
                   path.string(), b.Mark().line + 1,
                   b.IsMap() ? "a mapping" : (b.IsNull() ? "nothing" : "a list"));
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
  const YAML::Node value = load_document(text.substr(eq + 1), "override '" + text + "'");
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
  set_or_remove(nodes.back(), keys.back(), value);
}

YAML::Node load_yaml_file(const std::string& path) {
  return load_document(read_config_text(path), fmt::format("'{}'", path));
}

YAML::Node load_config_yaml(const std::string& path) {
  std::vector<fs::path> chain;
  return load_with_bases(path, chain);
}

YAML::Node parse_config_yaml(const std::string& text, const std::string& origin) {
  YAML::Node root = load_document(text, fmt::format("'{}'", origin));
  RELPOS_CHECK(root.IsMap(), kWho, "'{}' must be a mapping at the top level", origin);
  remove_keys_without_value(root);
  return root;
}

YAML::Node load_written_config_yaml(const std::string& path) {
  return parse_config_yaml(read_config_text(path), path);
}

std::string text_override(const std::string& key, const std::string& value) {
  std::string quoted = "\"";  // a double-quoted YAML scalar: only \ and " and controls escaped
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      quoted.push_back('\\');
      quoted.push_back(c);
    } else if (byte < 0x20 || byte == 0x7f) {
      quoted += fmt::format("\\x{:02x}", byte);
    } else {
      quoted.push_back(c);
    }
  }
  return key + "=" + quoted + "\"";
}

}  // namespace relpos
