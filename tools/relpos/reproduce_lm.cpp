// `relpos reproduce lm` (reproduce.h): the language-model table. The cells of
// configs/paper/lm.csv run as the paper tables' grids do (a scale, seeds, resume), then each
// run's best checkpoint is evaluated on the test split with 1x, 2x and 4x the memory it trained
// with: Transformer-XL's claim that relative positions carry over to contexts longer than those
// seen in training (Dai et al. 2019, §3.3), against absolute positions and linear attention.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/file_write.h"
#include "core/json.h"
#include "tools/relpos/checkpoint_eval.h"
#include "tools/relpos/reproduce.h"
#include "tools/relpos/reproduce_runs.h"

namespace relpos::cli {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMultiples[] = {1, 2, 4};

// One run's test bpc of its best checkpoint at each multiple of its training memory. A model
// without a memory (mem_len 0) has the 1x value only.
struct MemoryEval {
  int64_t mem_len = 0;
  std::map<int64_t, double> bpc;  // multiple -> bpc
  std::string problem;            // why a multiple has no value
};

int64_t training_mem_len(const RunConfig& config) {
  return config.model.own.get<int64_t>("mem_len", 0);
}

// Reads <run>/memory_eval.json, which an earlier invocation left, or evaluates and writes it
// (once the 1x evaluation succeeded: a multiple the model refuses is kept as its problem).
MemoryEval memory_eval(const fs::path& run, bool report_only) {
  MemoryEval m;
  const fs::path cache = run / "memory_eval.json", best = run / "checkpoints" / "best.h5";
  if (fs::exists(cache)) {
    const Json j = read_json_file("reproduce", cache.string());
    m.mem_len = j.value("mem_len", int64_t{0});
    m.problem = j.value("problem", std::string());
    for (const auto& [multiple, bpc] : j.at("bpc").items())
      m.bpc[std::stoll(multiple)] = bpc.get<double>();
    return m;
  }
  if (report_only || !fs::exists(best)) {
    m.problem = "not evaluated: no " + best.string();
    return m;
  }
  // The memory it trained with, from the run's resolved config (its eval.mem_len may differ:
  // Transformer-XL's evaluates enwik8 with 2,100 after training with 512).
  m.mem_len = training_mem_len(load_written_config((run / "config.yaml").string()));
  Json bpc = Json::object();
  for (int64_t multiple : kMultiples) {
    try {
      const CheckpointEval e =
          load_for_eval("reproduce", best.string(), "test",
                        {fmt::format("eval.mem_len={}", multiple * m.mem_len)});
      const double value = e.task->evaluate("test", 0).get("bpc");
      m.bpc[multiple] = value;
      bpc[std::to_string(multiple)] = value;
    } catch (const Error& error) {
      m.problem = fmt::format("{}x memory: {}", multiple, error.what());
      break;
    }
    if (m.mem_len == 0) break;  // nothing to lengthen
  }
  if (m.bpc.empty()) return m;  // nothing evaluated (data missing?): tried again next time
  Json j = {{"mem_len", m.mem_len}, {"bpc", bpc}};
  if (!m.problem.empty()) j["problem"] = m.problem;
  write_file_atomic("reproduce", cache.string(), j.dump(2) + "\n");
  return m;
}

// One cell's columns over its seeds.
struct LmRow {
  const Cell* cell;
  std::vector<double> best, last, seconds, megabytes;
  std::map<int64_t, std::vector<double>> at_memory;
  int64_t mem_len = 0;
  std::vector<std::string> problems;
};

LmRow lm_row(const Row& row, const Grid& grid) {
  LmRow r{row.cell, {}, {}, {}, {}, {}, 0, {}};
  for (size_t seed = 0; seed < row.runs.size(); ++seed) {
    const RunOutcome& run = row.runs[seed];
    if (!run.done) {
      r.problems.push_back(run.problem);
      continue;
    }
    r.best.push_back(run.bpc_best);
    r.last.push_back(run.bpc_last);
    r.seconds.push_back(run.train_s);
    r.megabytes.push_back(run.peak_gb * 1e3);
    const MemoryEval m =
        memory_eval(grid.run_dir(*row.cell, static_cast<int64_t>(seed)), grid.o.report_only);
    r.mem_len = m.mem_len;
    for (const auto& [multiple, bpc] : m.bpc) r.at_memory[multiple].push_back(bpc);
    if (!m.problem.empty()) r.problems.push_back(m.problem);
  }
  return r;
}

// A column of the markdown table: mean ± sd over seeds, "—" where there is none.
std::string cell_text(const std::vector<double>& xs, int digits) {
  return xs.empty() ? "—" : mean_std(xs, 1.0, digits);
}

}  // namespace

TableReport reproduce_lm(const ReproduceOptions& o, const Scale& scale) {
  const Grid grid(o, scale);
  const fs::path out(o.out);
  make_directories("reproduce", out);
  if (!o.report_only) prepare_missing_data(grid.cells, o.data_dir, scale);
  TableReport report;
  const std::vector<Row> rows = grid.run(report);

  std::ostringstream md, csv;
  md << fmt::format("# lm reproduced: scale {}, device {}, {} seed(s), {}\n\n", scale.name,
                    o.device, grid.seeds, date_today())
     << "Test bits per character. The memory columns evaluate the best checkpoint with 1x, 2x "
        "and 4x the memory it trained with (— : the model has no memory to lengthen).\n\n"
     << "| model | positions | memory | test bpc (best val ckpt) | test bpc (last) | train s | "
        "peak MB | bpc, 1x memory | 2x | 4x |\n|---|---|---|---|---|---|---|---|---|---|\n";
  csv << "model,pe,seeds_done,mem_len,bpc_best_mean,bpc_best_std,bpc_last_mean,bpc_last_std,"
         "train_s_mean,train_s_std,peak_mb_mean,peak_mb_std,bpc_1x_mean,bpc_1x_std,bpc_2x_mean,"
         "bpc_2x_std,bpc_4x_mean,bpc_4x_std,problem\n";
  std::map<std::pair<std::string, std::string>, int64_t> problems;  // (cell, reason) -> runs
  for (const Row& row : rows) {
    const LmRow r = lm_row(row, grid);
    const Cell& c = *r.cell;
    md << "| " << c.model << " | " << c.pe << " | " << r.mem_len << " | " << cell_text(r.best, 3)
       << " | " << cell_text(r.last, 3) << " | " << cell_text(r.seconds, 0) << " | "
       << cell_text(r.megabytes, 1);
    csv << c.model << "," << c.pe << "," << r.best.size() << "," << r.mem_len << ","
        << csv_mean_sd(r.best, 1) << "," << csv_mean_sd(r.last, 1) << ","
        << csv_mean_sd(r.seconds, 1) << "," << csv_mean_sd(r.megabytes, 1);
    for (int64_t multiple : kMultiples) {
      const auto at = r.at_memory.find(multiple);
      md << " | " << (at == r.at_memory.end() ? "—" : cell_text(at->second, 3));
      csv << "," << (at == r.at_memory.end() ? "," : csv_mean_sd(at->second, 1));
    }
    md << " |\n";
    std::string reason = r.problems.empty() ? "" : r.problems.front();
    std::replace(reason.begin(), reason.end(), ',', ';');
    csv << "," << reason << "\n";
    for (const std::string& p : r.problems) ++problems[{c.name, p}];
  }
  report.cells = static_cast<int64_t>(rows.size());
  report.wall_s = grid.elapsed();
  md << fmt::format(
      "\n{} of {} runs finished; their training took {:.1f} min in all; this invocation took "
      "{:.1f} min.\n",
      report.runs_done, grid.total(), report.train_s / 60, report.wall_s / 60);
  if (!problems.empty()) {
    md << "\n## Runs or evaluations without a result\n\n";
    for (const auto& [what, runs] : problems)
      md << "- `" << what.first << "` (" << runs << " run" << (runs > 1 ? "s" : "")
         << "): " << what.second << "\n";
  }
  write_file_atomic("reproduce", (out / "table.md").string(), md.str());
  write_file_atomic("reproduce", (out / "table.csv").string(), csv.str());
  report.markdown = md.str();
  std::printf("lm: %zu cells, %lld run(s) trained now -> %s, %s\n", rows.size(),
              static_cast<long long>(report.runs_trained), (out / "table.md").string().c_str(),
              (out / "table.csv").string().c_str());
  plot("lm-memory", out / "figure.png", quoted((out / "table.csv").string()));
  return report;
}

}  // namespace relpos::cli
