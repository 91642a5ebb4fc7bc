// The runs behind a reproduced table (reproduce_runs.h).
#include "tools/relpos/reproduce_runs.h"

#include <cmath>

#include "core/error.h"
#include "core/json.h"
#include "train/config.h"
#include "train/trainer.h"

namespace relpos::cli {

namespace fs = std::filesystem;

namespace {

// A number of summary.json: NaN where it is absent or null (a non-finite value).
double summary_number(const Json& object, const std::string& key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : std::nan("");
}

}  // namespace

RunOutcome read_summary(const fs::path& file) {
  RunOutcome r;
  Json summary;
  try {
    summary = read_json_file("reproduce", file.string());
  } catch (const Error& e) {
    r.problem = fmt::format("torn summary: {} (delete it to rerun the cell)", e.what());
    return r;
  }
  const Json best = summary.value("test_best", Json::object());
  const Json last = summary.value("test_last", Json::object());
  if (!best.is_object() || !last.is_object() || !best.contains("accuracy") ||
      !last.contains("accuracy")) {
    r.problem = fmt::format(
        "torn summary: {} lacks the test accuracies (delete it to rerun the cell)", file.string());
    return r;
  }
  r.done = true;
  r.accuracy_best = summary_number(best, "accuracy");
  r.f1_best = summary_number(best, "macro_f1");
  r.accuracy_last = summary_number(last, "accuracy");
  r.f1_last = summary_number(last, "macro_f1");
  r.train_s = summary_number(summary, "train_time_s");
  r.peak_gb = summary_number(summary, "peak_memory_bytes") / 1e9;
  return r;
}

RunOutcome run_cell(const Cell& cell, int64_t seed, const ReproduceOptions& o, const Scale& scale,
                    const fs::path& dir) {
  if (fs::exists(dir / "summary.json")) return read_summary(dir / "summary.json");
  if (o.report_only) {
    RunOutcome r;
    r.problem = "not run: no finished run in " + dir.string();
    return r;
  }
  try {
    const RunConfig paper = load_config(cell.config);
    std::vector<std::string> overrides = scale_overrides(scale, scale_cell(cell, paper), seed);
    overrides.push_back("data.dir=" + data_folder(o.data_dir, scale, paper.data.dataset).string());
    overrides.push_back("train.out=" + dir.string());
    overrides.push_back("device=" + o.device);
    TrainerOptions options;
    options.verbose = false;
    const fs::path last = dir / "checkpoints" / "last.h5";
    if (o.resume && fs::exists(last)) options.resume = last.string();
    options.overwrite = true;  // a cell without a summary starts again (its last try failed)
    Trainer trainer(load_config(cell.config, overrides), options);
    trainer.run();
    return read_summary(dir / "summary.json");
  } catch (const DataMissing& e) {
    RunOutcome r;
    r.problem = std::string("data missing: ") + e.what();
    return r;
  } catch (const std::exception& e) {  // relpos errors, and running out of memory
    RunOutcome r;
    r.problem = std::string("failed: ") + e.what();
    return r;
  }
}

}  // namespace relpos::cli
