// `relpos data prepare NAME --out DIR [--key value ...]` (datasets/prepare.h): runs the dataset's
// registered preparer, or prints how to get a dataset that cannot be made here. Its --help lists
// every registered dataset (datasets/dataset_registry.h).
#include <cstdio>
#include <string>

#include "core/error.h"
#include "datasets/dataset_registry.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

constexpr const char* kUsage = "usage: relpos data prepare NAME --out DIR [--key value ...]";

// The usage and one line per dataset: its name, whether it is made here, its description.
std::string help_text() {
  std::string text = std::string(kUsage) +
                     "\nWrites a dataset made here into DIR; for the others, prints where to "
                     "get them and the layout read.\nDatasets (data.dataset):\n";
  for (const std::string& name : dataset_registry().names()) {
    const DatasetEntry& entry = dataset_registry().at(name);
    text += fmt::format("  {:<14} {:<10} {}\n", name, entry.prepare ? "made here" : "printed",
                        entry.description);
  }
  return text + "`relpos data prepare NAME` without --out prints how to get NAME.\n";
}

}  // namespace

int data_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args.back() == "--help" || args.back() == "-h")) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  RELPOS_CHECK(args.size() >= 2 && args[0] == "prepare", "data", "{}", kUsage);
  const std::string& name = args[1];
  const DatasetEntry& entry = dataset_registry().at(name, "data prepare");
  PrepareRequest request;
  for (size_t i = 2; i < args.size(); i += 2) {
    RELPOS_CHECK(args[i].rfind("--", 0) == 0 && i + 1 < args.size(), "data",
                 "expected --key value pairs after the dataset name, got '{}'", args[i]);
    const std::string key = args[i].substr(2);
    if (key == "out")
      request.out_dir = args[i + 1];
    else
      request.options.set(key, args[i + 1]);
  }
  if (!entry.prepare || (request.out_dir.empty() && request.options.empty())) {
    std::printf("%s\n", entry.how_to_get.c_str());
    return 0;
  }
  RELPOS_CHECK(!request.out_dir.empty(), "data", "prepare {} needs --out DIR", name);
  const std::string summary = entry.prepare(request);
  request.options.check_all_used();
  std::printf("%s\n", summary.c_str());
  return 0;
}

}  // namespace relpos::cli
