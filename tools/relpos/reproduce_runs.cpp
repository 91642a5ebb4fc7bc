// The runs behind a reproduced table (reproduce_runs.h).
#include "tools/relpos/reproduce_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

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
  const char* metric = best.is_object() && best.contains("bpc") ? "bpc" : "accuracy";
  if (!best.is_object() || !last.is_object() || !best.contains(metric) || !last.contains(metric)) {
    r.problem = fmt::format("torn summary: {} lacks the test {} (delete it to rerun the cell)",
                            file.string(), std::string(metric) == "bpc" ? "bpc" : "accuracies");
    return r;
  }
  r.done = true;
  if (std::string(metric) == "bpc") {
    r.bpc_best = summary_number(best, "bpc");
    r.bpc_last = summary_number(last, "bpc");
  } else {
    r.accuracy_best = summary_number(best, "accuracy");
    r.f1_best = summary_number(best, "macro_f1");
    r.accuracy_last = summary_number(last, "accuracy");
    r.f1_last = summary_number(last, "macro_f1");
  }
  r.train_s = summary_number(summary, "train_time_s");
  r.peak_gb = summary_number(summary, "peak_memory_bytes") / 1e9;
  return r;
}

Stats stats(const std::vector<double>& xs) {
  Stats s;
  s.n = xs.size();
  if (xs.empty()) return s;
  for (double x : xs) s.mean += x / static_cast<double>(xs.size());
  if (xs.size() > 1) {
    for (double x : xs) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(xs.size() - 1));
  }
  return s;
}

std::string mean_std(const std::vector<double>& xs, double scale, int digits) {
  if (xs.empty()) return "";
  std::vector<double> scaled;
  for (double x : xs) scaled.push_back(x * scale);
  const Stats s = stats(scaled);
  if (s.n == 1) return fmt::format("{:.{}f}", s.mean, digits);
  return fmt::format("{:.{}f} ± {:.{}f}", s.mean, digits, s.sd, digits);
}

std::string csv_mean_sd(const std::vector<double>& xs, double scale) {
  if (xs.empty()) return ",";
  std::vector<double> scaled;
  for (double x : xs) scaled.push_back(x * scale);
  const Stats s = stats(scaled);
  return fmt::format("{},{}", s.mean, s.sd);
}

std::string date_today() {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  return date;
}

std::vector<std::string> cell_overrides(const Cell& cell, const Scale& scale, int64_t seed,
                                        const std::vector<std::string>& extra) {
  const RunConfig paper = load_config(cell.config);
  std::vector<std::string> layers = scale_overrides(scale, scale_cell(cell, paper), seed);
  layers.insert(layers.end(), cell.overrides.begin(), cell.overrides.end());
  layers.insert(layers.end(), extra.begin(), extra.end());
  // The layers set some keys more than once (a scale's rules, then the cell's own, then the
  // placement); the last value of a key is the one that counts, and `relpos train` takes each key
  // once: the earlier ones are left out.
  std::vector<std::string> overrides;
  for (size_t i = 0; i < layers.size(); ++i) {
    const size_t equals = layers[i].find('=');  // none: refused by name when applied
    const std::string key = layers[i].substr(0, equals == std::string::npos ? 0 : equals + 1);
    const bool set_again =
        !key.empty() && std::any_of(layers.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                    layers.end(), [&](const std::string& later) {
                                      return later.compare(0, key.size(), key) == 0;
                                    });
    if (!set_again) overrides.push_back(layers[i]);
  }
  return overrides;
}

RunConfig cell_run_config(const Cell& cell, const Scale& scale, int64_t seed,
                          const std::vector<std::string>& extra) {
  return load_config(cell.config, cell_overrides(cell, scale, seed, extra));
}

std::vector<std::string> run_placement(const Cell& cell, int64_t seed, const ReproduceOptions& o,
                                       const Scale& scale, const fs::path& dir) {
  const std::string dataset = cell_run_config(cell, scale, seed).data.dataset;
  return {text_override("data.dir", data_folder(o.data_dir, scale, dataset).string()),
          text_override("train.out", dir.string()), text_override("device", o.device)};
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
    const RunConfig config =
        cell_run_config(cell, scale, seed, run_placement(cell, seed, o, scale, dir));
    TrainerOptions options;
    options.verbose = false;
    const fs::path last = dir / "checkpoints" / "last.h5";
    if (o.resume && fs::exists(last)) options.resume = last.string();
    // A cell without a summary that does not resume starts again (its last try failed).
    options.overwrite = options.resume.empty();
    Trainer trainer(config, options);
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

Grid::Grid(const ReproduceOptions& options, const Scale& s) : o(options), scale(s) {
  cells = table_cells(o.table, o.configs);
  if (!o.only.empty())
    std::erase_if(cells, [&](const Cell& c) { return c.name.find(o.only) == std::string::npos; });
  RELPOS_CHECK(!cells.empty(), "reproduce", "no cell of {} matches '{}'", o.table, o.only);
  // --seeds, else the scale's for this table's runs (Table 3's are Table 1's), else 1.
  const auto scale_seeds = scale.seeds.find(o.table == "table3" ? "table1" : o.table);
  seeds = o.seeds > 0 ? o.seeds : (scale_seeds == scale.seeds.end() ? 1 : scale_seeds->second);
}

double Grid::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

fs::path Grid::run_dir(const Cell& cell, int64_t seed) const {
  return fs::path(o.runs) / cell.name / fmt::format("seed{}", seed);
}

std::vector<Row> Grid::run(TableReport& report) const {
  // The runs still to train: unfinished, and their data is there (the others end at once).
  int64_t to_train = 0;
  std::map<const Cell*, bool> has_data;
  for (const Cell& cell : cells) {
    const std::string dataset = cell_run_config(cell, scale, 0).data.dataset;
    has_data[&cell] = fs::exists(data_folder(o.data_dir, scale, dataset));
    for (int64_t seed = 0; seed < seeds; ++seed)
      to_train += has_data[&cell] && !fs::exists(run_dir(cell, seed) / "summary.json");
  }
  std::vector<Row> rows;
  std::vector<PendingRun> pending;  // with o.jobs > 1: the runs the child processes train
  int64_t k = 0;
  for (const Cell& cell : cells) {
    Row row{&cell, {}};
    for (int64_t seed = 0; seed < seeds; ++seed, ++k) {
      const bool finished = fs::exists(run_dir(cell, seed) / "summary.json");
      if (o.jobs > 1 && !finished && has_data[&cell] && !o.report_only) {
        pending.push_back({&cell, rows.size(), seed, k, run_dir(cell, seed)});
        row.runs.emplace_back();
        continue;
      }
      progress(k, cell, seed, finished, report, to_train);
      if (!finished && has_data[&cell]) --to_train;
      const RunOutcome r = run_cell(cell, seed, o, scale, run_dir(cell, seed));
      record(r, !finished, nullptr, report);
      row.runs.push_back(r);
    }
    rows.push_back(std::move(row));
  }
  if (!pending.empty()) run_in_processes(pending, rows, report);
  return rows;
}

// "[reproduce] table2 cell 3/10: mnist/... seed 0 (done, skipped), ETA 4 min": the ETA is the
// mean time of the runs trained so far, for each run still to train.
void Grid::progress(int64_t k, const Cell& cell, int64_t seed, bool finished,
                    const TableReport& report, int64_t to_train) const {
  const std::string eta =
      report.runs_trained > 0
          ? fmt::format(", ETA {:.0f} min", elapsed() / static_cast<double>(report.runs_trained) *
                                                static_cast<double>(to_train) / 60.0)
          : "";
  std::fprintf(stderr, "[reproduce] %s cell %lld/%lld: %s seed %lld%s%s\n", o.table.c_str(),
               static_cast<long long>(k + 1), static_cast<long long>(total()), cell.name.c_str(),
               static_cast<long long>(seed), finished ? " (done, skipped)" : "", eta.c_str());
}

void Grid::record(const RunOutcome& r, bool trained_now, const PendingRun* named,
                  TableReport& report) const {
  const std::string name =
      named != nullptr ? fmt::format("{} seed {}: ", named->cell->name, named->seed) : "";
  if (trained_now && r.done) {
    ++report.runs_trained;
    if (std::isnan(r.bpc_best))
      std::fprintf(stderr, "[reproduce]   %stest accuracy %.2f%%, macro-F1 %.2f%%, %.0f s\n",
                   name.c_str(), 100 * r.accuracy_best, 100 * r.f1_best, r.train_s);
    else
      std::fprintf(stderr, "[reproduce]   %stest bpc %.3f, %.0f s\n", name.c_str(), r.bpc_best,
                   r.train_s);
  }
  if (r.done) {
    ++report.runs_done;
    report.train_s += r.train_s;
  } else {
    ++report.runs_missing;
  }
  if (!r.problem.empty())
    std::fprintf(stderr, "[reproduce]   %s%s\n", name.c_str(), r.problem.c_str());
}

}  // namespace relpos::cli
