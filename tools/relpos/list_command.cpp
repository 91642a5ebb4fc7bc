// `relpos list`: what a config can name, read from the registries (the only lists): attention
// variants, feature maps, positional encodings, models and datasets; with `--combinations`, every
// variant x feature map x encoding that builds (layers/attention/catalog.h).
#include <cstdio>
#include <memory>
#include <string>

#include "core/error.h"
#include "datasets/dataset_registry.h"
#include "layers/attention/catalog.h"
#include "layers/models/model.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

constexpr const char* kListFooter =
    "The names come from the registries: attention variants (model.attention.type), feature\n"
    "maps of kernelized attention (model.attention.feature_map), relative positional encodings\n"
    "(model.positional.type), models (model.type) and datasets (data.dataset, with what each\n"
    "holds).";

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

namespace {

int list(bool combinations) {
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

}  // namespace

void add_list_command(Command app, int& status) {
  auto combinations = std::make_shared<bool>(false);
  Command sub = app.add_subcommand("list", "Prints the names a config can use.");
  sub.footer(kListFooter);
  sub.add_flag("--combinations", *combinations,
               "every variant x feature map x encoding that builds, as the attention benchmark "
               "names them (relpos bench attention --filter NAME)");
  sub.callback([combinations, &status] { status = list(*combinations); });
}

}  // namespace relpos::cli
