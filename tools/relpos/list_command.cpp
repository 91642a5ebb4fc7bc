// `relpos list`: what a config can name, read from the registries (the only lists): attention
// variants, feature maps, positional encodings, models and datasets; with `--combinations`, every
// variant x feature map x encoding that builds (layers/attention/catalog.h).
#include <cstdio>
#include <string>

#include "core/error.h"
#include "datasets/dataset_registry.h"
#include "layers/attention/catalog.h"
#include "layers/models/model.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

constexpr const char* kListUsage =
    "usage: relpos list [--combinations]\n"
    "Prints the names a config can use, from the registries: attention variants\n"
    "(model.attention.type), feature maps of kernelized attention (model.attention.feature_map),\n"
    "relative positional encodings (model.positional.type), models (model.type) and datasets\n"
    "(data.dataset, with what each holds).\n"
    "--combinations: every variant x feature map x encoding that builds, as the attention\n"
    "benchmark names them (relpos bench attention --filter NAME).\n";

void print_line(const char* title, const std::vector<std::string>& names) {
  std::string line;
  for (const std::string& n : names) line += (line.empty() ? "" : ", ") + n;
  std::printf("%-22s %s\n", title, line.c_str());
}

}  // namespace

std::string registered_names_help() {
  std::string text;
  const auto join = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  text += "attention: " + join(attention_names()) + "\n";
  text += "feature maps: " + join(feature_map_names()) + "\n";
  text += "positional: " + join(positional_names()) + "\n";
  text += "models: " + join(model_registry().names()) + "\n";
  text += "datasets: " + join(dataset_registry().names()) + " (relpos data prepare --help)\n";
  return text;
}

int list_command(const std::vector<std::string>& args) {
  bool combinations = false;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kListUsage, stdout);
      return 0;
    }
    RELPOS_CHECK(a == "--combinations", "list", "unknown argument '{}'; see relpos list --help", a);
    combinations = true;
  }
  if (combinations) {
    for (const AttentionSetup& s : attention_setups()) std::printf("%s\n", s.name.c_str());
    return 0;
  }
  print_line("attention variants:", attention_names());
  print_line("feature maps:", feature_map_names());
  print_line("positional encodings:", positional_names());
  print_line("models:", model_registry().names());
  print_line("datasets:", dataset_registry().names());
  for (const std::string& name : dataset_registry().names())
    std::printf("  %-20s %s, %s\n", name.c_str(), task_kind_name(dataset_registry().at(name).kind),
                dataset_registry().at(name).description.c_str());
  return 0;
}

}  // namespace relpos::cli
