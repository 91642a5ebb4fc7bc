// The runs behind a reproduced table (reproduce_runs.cpp): one cell x seed trained, or read back
// from the summary.json it left, or the reason it has no result; and the grid of a table's cells
// and seeds, run in order with a progress line each.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tools/relpos/reproduce.h"

namespace relpos::cli {

// What one run of a cell left: its summary.json values, or why there is none.
struct RunOutcome {
  bool done = false;
  std::string
      problem;  // "data missing: ..." / "failed: ..." / "not run: ..." / "torn summary: ..."
  // Classifiers: test accuracy and macro-F1 of the best and the last checkpoint.
  double accuracy_best = 0, accuracy_last = 0, f1_best = 0, f1_last = 0;
  // Language models: test bits per character (NaN for classifiers).
  double bpc_best = std::nan(""), bpc_last = std::nan("");
  double train_s = 0, peak_gb = 0;
};

// A finished run's summary.json, or why it cannot be read: a torn or edited file is reported in
// the table as such (deleting it reruns the cell).
RunOutcome read_summary(const std::filesystem::path& file);

// The overrides of one run of `cell`, applied to its file in this order: the scale's for `seed`,
// then the cell's own, then `extra`.
std::vector<std::string> cell_overrides(const Cell& cell, const Scale& scale, int64_t seed,
                                        const std::vector<std::string>& extra = {});
// The configuration one run of `cell` trains: its file with cell_overrides.
RunConfig cell_run_config(const Cell& cell, const Scale& scale, int64_t seed,
                          const std::vector<std::string>& extra = {});
// The overrides that place a run: its data folder, its run directory and the device.
std::vector<std::string> run_placement(const Cell& cell, int64_t seed, const ReproduceOptions& o,
                                       const Scale& scale, const std::filesystem::path& dir);

// Trains one cell x seed into `dir` unless it is finished there (o.report_only: never trains).
RunOutcome run_cell(const Cell& cell, int64_t seed, const ReproduceOptions& o, const Scale& scale,
                    const std::filesystem::path& dir);

// Mean and sample standard deviation (0 for one value) of a cell's values over its seeds.
struct Stats {
  size_t n = 0;
  double mean = 0, sd = 0;
};
Stats stats(const std::vector<double>& xs);
// "mean ± sd" of xs times scale with `digits` decimals ("mean" for one value, "" for none).
std::string mean_std(const std::vector<double>& xs, double scale, int digits);
// "mean,sd" of xs times scale, or "," when there are none.
std::string csv_mean_sd(const std::vector<double>& xs, double scale);

// Today's date (UTC) as YYYY-MM-DD, for the tables' titles.
std::string date_today();

// One run still to train: the cell, its row in the grid, the seed and its run directory.
struct PendingRun {
  const Cell* cell = nullptr;
  size_t row = 0;
  int64_t seed = 0;
  int64_t number = 0;  // its place in the grid, from 0
  std::filesystem::path dir;
};

// The run of `pending` that --jobs starts next: the longest first, as far as is known, so a grid
// does not end with one long run alone on the machine. Runs of cells none of whose runs has
// started come first (grid order), so each cell's time is learnt early; then runs of cells whose
// first run is still going (the long ones are those still running); then by their cell's measured
// seconds, longest first. started[i]: pending[i] has started; seconds: the mean wall time of each
// cell's finished runs. pending.size() when every run has started.
size_t next_pending(const std::vector<PendingRun>& pending, const std::vector<bool>& started,
                    const std::map<const Cell*, double>& seconds);

// One cell's runs, by seed.
struct Row {
  const Cell* cell;
  std::vector<RunOutcome> runs;
};

// The grid of a table: its cells (o.only applied) and seeds, run (or read) in order.
struct Grid {
  const ReproduceOptions& o;
  const Scale& scale;
  std::vector<Cell> cells;
  int64_t seeds = 1;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  Grid(const ReproduceOptions& options, const Scale& s);
  int64_t total() const { return static_cast<int64_t>(cells.size()) * seeds; }
  double elapsed() const;
  std::filesystem::path run_dir(const Cell& cell, int64_t seed) const;

  // Every cell x seed: finished runs read, the others trained unless their data is missing;
  // with o.jobs > 1, up to o.jobs at once in child processes (reproduce_jobs.cpp).
  std::vector<Row> run(TableReport& report) const;

 private:
  void progress(int64_t k, const Cell& cell, int64_t seed, bool finished, const TableReport& report,
                int64_t to_train) const;
  // Counts a run's outcome in the report and prints its result line (named, when runs overlap).
  void record(const RunOutcome& r, bool trained_now, const PendingRun* named,
              TableReport& report) const;
  // Trains `pending` in `relpos train` child processes, o.jobs at a time, into rows.
  void run_in_processes(const std::vector<PendingRun>& pending, std::vector<Row>& rows,
                        TableReport& report) const;
};

}  // namespace relpos::cli
