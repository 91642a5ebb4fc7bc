// The runs behind a reproduced table (reproduce_runs.cpp): one cell x seed trained, or read back
// from the summary.json it left, or the reason it has no result.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "tools/relpos/reproduce.h"

namespace relpos::cli {

// What one run of a cell left: its summary.json values, or why there is none.
struct RunOutcome {
  bool done = false;
  std::string
      problem;  // "data missing: ..." / "failed: ..." / "not run: ..." / "torn summary: ..."
  double accuracy_best = 0, accuracy_last = 0, f1_best = 0, f1_last = 0, train_s = 0, peak_gb = 0;
};

// A finished run's summary.json, or why it cannot be read: a torn or edited file is reported in
// the table as such (deleting it reruns the cell).
RunOutcome read_summary(const std::filesystem::path& file);

// Trains one cell x seed into `dir` unless it is finished there (o.report_only: never trains).
RunOutcome run_cell(const Cell& cell, int64_t seed, const ReproduceOptions& o, const Scale& scale,
                    const std::filesystem::path& dir);

}  // namespace relpos::cli
