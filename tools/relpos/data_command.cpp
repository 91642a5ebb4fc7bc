// `relpos data prepare NAME --out DIR [--key value ...]` (datasets/prepare.h): runs the dataset's
// registered preparer, or prints how to get a dataset that cannot be made here. Its --help lists
// every registered dataset (datasets/dataset_registry.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "datasets/dataset_registry.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

// One line per dataset: its name, whether it is made here, its description.
std::string datasets_help() {
  std::string text = "Datasets (data.dataset):\n";
  for (const std::string& name : dataset_registry().names()) {
    const DatasetEntry& entry = dataset_registry().at(name);
    text += fmt::format("  {:<14} {:<10} {}\n", name, entry.prepare ? "made here" : "printed",
                        entry.description);
  }
  return text + "`relpos data prepare NAME` without --out prints how to get NAME.";
}

struct PrepareArgs {
  std::string name, out;
};

// Runs `prepare`; a folder it was to make and left empty when it failed is removed.
std::string prepare_into(const DatasetEntry& entry, const PrepareRequest& request) {
  std::error_code error;
  const bool existed = std::filesystem::exists(request.out_dir, error);
  try {
    return entry.prepare(request);
  } catch (...) {
    if (!existed && std::filesystem::is_empty(request.out_dir, error))
      std::filesystem::remove(request.out_dir, error);
    throw;
  }
}

// `extras`: the --key value pairs after the dataset's name, handed to its preparer (dashes in a
// key read as underscores: --max-depth is the option max_depth).
int prepare(const PrepareArgs& a, const std::vector<std::string>& extras) {
  const DatasetEntry& entry = dataset_registry().at(a.name, "data prepare");
  PrepareRequest request;
  request.out_dir = a.out;
  for (size_t i = 0; i < extras.size(); i += 2) {
    RELPOS_CHECK(extras[i].rfind("--", 0) == 0 && i + 1 < extras.size(), "data",
                 "expected --key value pairs after the dataset name, got '{}'", extras[i]);
    std::string key = extras[i].substr(2);
    std::replace(key.begin(), key.end(), '-', '_');  // --max-depth as the command line spells it
    RELPOS_CHECK(!request.options.has(key), "data prepare", "option '{}' is given twice", key);
    request.options.set(key, extras[i + 1]);
  }
  if (!entry.prepare) {
    RELPOS_CHECK(request.out_dir.empty() && request.options.empty(), "data prepare",
                 "{} is not made here, so it takes no --out or options; `relpos data prepare {}` "
                 "prints how to get it",
                 a.name, a.name);
    std::printf("%s\n", entry.how_to_get.c_str());
    return 0;
  }
  if (request.out_dir.empty() && request.options.empty()) {
    std::printf("%s\n", entry.how_to_get.c_str());
    return 0;
  }
  RELPOS_CHECK(!request.out_dir.empty(), "data", "prepare {} needs --out DIR", a.name);
  const std::string summary = prepare_into(entry, request);
  request.options.check_all_used();
  std::printf("%s\n", summary.c_str());
  return 0;
}

}  // namespace

void add_data_command(Command app, int& status) {
  Command data = app.add_subcommand("data", "Makes or describes the datasets.");
  data.require_subcommand();
  data.footer(datasets_help);
  auto a = std::make_shared<PrepareArgs>();
  Command sub = data.add_subcommand(
      "prepare",
      "Writes a dataset made here into DIR; for the others, prints where to get them and the "
      "layout read. Further --key value pairs are the dataset's own options (--max-depth or "
      "--max_depth).");
  sub.footer(datasets_help);
  sub.add_option("NAME", a->name, "a dataset (relpos data --help lists them)").required();
  sub.add_option("--out", a->out, "the folder written").type_name("DIR");
  sub.allow_extras();
  sub.callback([a, sub, &status] { status = prepare(*a, sub.remaining()); });
}

}  // namespace relpos::cli
