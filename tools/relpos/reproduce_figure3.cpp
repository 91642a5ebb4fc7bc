// `relpos reproduce figure3`: the paper's Figure 3 (time and memory of attention variants vs
// sequence length) as `relpos bench attention` measures it, written to OUT/bench.json and drawn
// to OUT/figure3.png by tools/plots.py when Python with matplotlib is there.
#include <filesystem>

#include "core/error.h"
#include "core/file_write.h"
#include "tools/relpos/commands.h"
#include "tools/relpos/reproduce.h"

namespace relpos::cli {

int reproduce_figure3(const Scale& scale, const std::string& device, const std::string& out,
                      const std::string& only) {
  namespace fs = std::filesystem;
  make_directories("reproduce", out);
  const std::string json = (fs::path(out) / "bench.json").string();
  // The lengths and shapes of the scale (configs/paper/scales.yaml; the bench's defaults are
  // the paper's B 1, H 8, D 32).
  std::vector<std::string> args{"bench", "attention", "--json-out", json, "--device", device};
  args.insert(args.end(), scale.figure3.begin(), scale.figure3.end());
  if (!only.empty()) args.insert(args.end(), {"--filter", only});
  const int status = run_relpos(args);
  if (status != 0) return status;
  plot("figure3", fs::path(out) / "figure3.png", quoted(json));
  return 0;
}

}  // namespace relpos::cli
