// One table of `relpos reproduce` (reproduce.h): the grid of runs behind it, then table.md and
// table.csv with our values beside the paper's. A cell whose data is missing says so (and how to
// get it) in the table instead of failing the grid.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/file_write.h"
#include "core/json.h"
#include "tools/relpos/reproduce.h"
#include "tools/relpos/reproduce_runs.h"

namespace relpos::cli {
namespace {

namespace fs = std::filesystem;

std::string paper_text(const PaperValue& p, bool table3) {
  if (table3) {
    const std::string hours = p.note.empty() ? p.hours + " h" : p.note;
    return p.peak_gb.empty() ? hours : hours + ", " + p.peak_gb + " GB";
  }
  if (!p.note.empty() && p.value.empty()) return p.note;
  return p.std.empty() ? p.value : p.value + " ± " + p.std;
}

std::string csv_safe(std::string text) {
  std::replace(text.begin(), text.end(), ',', ';');
  return text;
}

double number(const std::string& text) {
  return text.empty() ? std::nan("") : std::stod(text);
}

// Table 2's question: is +FastRPB better for every model? Per model, the with - without
// differences of the runs with the same seed, their mean ± std and how many are positive.
std::string paired_differences(const std::vector<Row>& rows,
                               const std::map<std::string, PaperValue>& paper) {
  std::ostringstream md;
  if (std::none_of(rows.begin(), rows.end(),
                   [](const Row& r) { return r.cell->pe == "fastrpb2d"; }))
    return "";
  md << "\n## With − without FastRPB 2D, paired by seed (macro-F1 points, best checkpoint)\n\n"
        "| model | ours: mean ± std | seeds where FastRPB is better | paper |\n"
        "|---|---|---|---|\n";
  for (const Row& with : rows) {
    if (with.cell->pe != "fastrpb2d") continue;
    const auto without = std::find_if(rows.begin(), rows.end(), [&](const Row& r) {
      return r.cell->model == with.cell->model && r.cell->pe == "none";
    });
    if (without == rows.end()) continue;
    std::vector<double> diffs;
    for (size_t s = 0; s < std::min(with.runs.size(), without->runs.size()); ++s)
      if (with.runs[s].done && without->runs[s].done)
        diffs.push_back(100.0 * (with.runs[s].f1_best - without->runs[s].f1_best));
    const int64_t better =
        std::count_if(diffs.begin(), diffs.end(), [](double d) { return d > 0; });
    const std::string key = "mnist/" + with.cell->model + "/";
    const auto p_with = paper.find(key + "fastrpb2d"), p_without = paper.find(key + "none");
    const std::string paper_diff =
        p_with == paper.end() || p_without == paper.end()
            ? ""
            : fmt::format("{:+.2f}",
                          number(p_with->second.value) - number(p_without->second.value));
    const Stats d = stats(diffs);
    md << "| " << with.cell->model << " | "
       << (diffs.empty() ? "" : fmt::format("{:+.2f} ± {:.2f}", d.mean, d.sd)) << " | " << better
       << " of " << diffs.size() << " | " << paper_diff << " |\n";
  }
  return md.str();
}

// Table 3's baseline: linear SIKF without a positional encoding, per task (ours and paper's),
// and each cell's time and memory as a ratio to it.
struct Baselines {
  std::map<std::string, std::pair<double, double>> ours, paper;  // task -> (s or h, GB)

  Baselines(const std::vector<Row>& rows, const std::map<std::string, PaperValue>& values) {
    for (const Row& row : rows) {
      if (row.cell->model != "linear_sikf" || row.cell->pe != "none") continue;
      std::vector<double> s, gb;
      for (const RunOutcome& r : row.runs)
        if (r.done) s.push_back(r.train_s), gb.push_back(r.peak_gb);
      if (!s.empty()) ours[row.cell->task] = {stats(s).mean, stats(gb).mean};
      const auto p = values.find(row.cell->task + "/linear_sikf/none");
      if (p != values.end())
        paper[row.cell->task] = {number(p->second.hours), number(p->second.peak_gb)};
    }
  }
  static std::string ratio(double x, const std::map<std::string, std::pair<double, double>>& base,
                           const std::string& task, bool memory) {
    const auto b = base.find(task);
    if (b == base.end() || std::isnan(x)) return std::string();
    const double denominator = memory ? b->second.second : b->second.first;
    return std::isnan(denominator) || denominator <= 0 ? std::string()
                                                       : fmt::format("{:.2f}×", x / denominator);
  }
};

// A cell's finished runs, as the table's columns read them.
struct CellValues {
  std::vector<double> best, last, accuracy, seconds, gb;
  std::string problem;  // of a run without a result

  CellValues(const Row& row, bool table2) {
    for (const RunOutcome& r : row.runs) {
      if (!r.done) {
        problem = r.problem;
        continue;
      }
      best.push_back(table2 ? r.f1_best : r.accuracy_best);
      last.push_back(table2 ? r.f1_last : r.accuracy_last);
      accuracy.push_back(r.accuracy_best);
      seconds.push_back(r.train_s);
      gb.push_back(r.peak_gb);
    }
  }
};

// table.md and table.csv, one row per cell: ours beside the paper's.
struct TableText {
  const ReproduceOptions& o;
  const std::map<std::string, PaperValue>& paper;
  const Baselines& baselines;
  bool table2 = o.table == "table2", table3 = o.table == "table3";
  std::ostringstream md, csv;                                // written whole, checked, at the end
  std::map<std::string, std::vector<std::string>> problems;  // reason -> cells

  TableText(const ReproduceOptions& options, const std::map<std::string, PaperValue>& values,
            const Baselines& base)
      : o(options), paper(values), baselines(base) {}

  void header(const Scale& scale, int64_t seeds) {
    md << fmt::format("# {} reproduced: scale {}, device {}, {} seed(s), {}\n\n", o.table,
                      scale.name, o.device, seeds, date_today());
    if (table3) {
      md << "| task | model | pe | ours: train s, peak GB | ours: time, memory ÷ SIKF | paper "
            "| paper: time, memory ÷ SIKF |\n|---|---|---|---|---|---|---|\n";
    } else {
      const std::string metric = table2 ? "macro-F1 %" : "accuracy %";
      md << "| task | model | pe | ours: " << metric << " (best val ckpt) | ours: " << metric
         << " (last)" << (table2 ? " | ours: accuracy % (best val ckpt)" : "")
         << " | paper |\n|---|---|---|---|---|---|" << (table2 ? "---|" : "") << "\n";
    }
    csv << "task,model,pe,seeds_done,"
        << (table3 ? "train_hours,peak_gb" : "best_mean,best_std,last_mean,last_std")
        << (table2 ? ",accuracy_best_mean,accuracy_best_std" : "") << ",paper,problem\n";
  }

  // Table 3's ratio columns: ours, then the paper's (its memory ratio also where its time is
  // OOM / too slow, "—" standing for the time).
  void table3_ratios(const Cell& c, const CellValues& v, const PaperValue* p,
                     const std::string& paper_cell) {
    const std::string ours = Baselines::ratio(stats(v.seconds).mean, baselines.ours, c.task, false);
    md << " | "
       << (ours.empty()
               ? ""
               : ours + ", " + Baselines::ratio(stats(v.gb).mean, baselines.ours, c.task, true))
       << " | " << paper_cell << " | ";
    const std::string paper_time =
        p ? Baselines::ratio(number(p->hours), baselines.paper, c.task, false) : "";
    const std::string paper_memory =
        p ? Baselines::ratio(number(p->peak_gb), baselines.paper, c.task, true) : "";
    md << (paper_memory.empty() ? paper_time
                                : (paper_time.empty() ? "—" : paper_time) + ", " + paper_memory)
       << " |\n";
  }

  void row(const Row& row) {
    const CellValues v(row, table2);
    const Cell& c = *row.cell;
    const auto found = paper.find(c.task + "/" + c.model + "/" + c.pe);
    const PaperValue* p = found == paper.end() ? nullptr : &found->second;
    const std::string paper_cell = p ? paper_text(*p, table3) : "";
    md << "| " << c.task << " | " << c.model << " | " << c.pe << " | ";
    if (v.best.empty()) {
      // The table says what kind; the reasons are listed once under it.
      md << v.problem.substr(0, v.problem.find(':'));
      problems[v.problem].push_back(c.name);
    } else if (table3) {
      md << mean_std(v.seconds, 1.0, 0) << " s, " << mean_std(v.gb, 1.0, 3) << " GB";
    } else {
      md << mean_std(v.best, 100.0, 2);
    }
    if (table3) {
      table3_ratios(c, v, p, paper_cell);
    } else {
      md << " | " << mean_std(v.last, 100.0, 2);
      if (table2) md << " | " << mean_std(v.accuracy, 100.0, 2);
      md << " | " << paper_cell << " |\n";
    }
    csv << c.task << "," << c.model << "," << c.pe << "," << v.best.size() << ",";
    if (table3) {
      const std::string h = csv_mean_sd(v.seconds, 1.0 / 3600.0), g = csv_mean_sd(v.gb, 1.0);
      csv << h.substr(0, h.find(',')) << "," << g.substr(0, g.find(','));
    } else {
      csv << csv_mean_sd(v.best, 100.0) << "," << csv_mean_sd(v.last, 100.0);
      if (table2) csv << "," << csv_mean_sd(v.accuracy, 100.0);
    }
    csv << "," << csv_safe(paper_cell) << "," << (v.best.empty() ? csv_safe(v.problem) : "")
        << "\n";
  }

  void footer(const std::vector<Row>& rows, const TableReport& report, int64_t total) {
    md << fmt::format("\n{} of {} runs finished; their training took {:.1f} min in all.\n",
                      report.runs_done, total, report.train_s / 60);
    if (table2) md << paired_differences(rows, paper);
    if (problems.empty()) return;
    md << "\n## Cells without a result\n\n";
    for (const auto& [reason, names] : problems)
      md << "- " << names.size() << " cell(s), e.g. `" << names.front() << "`: " << reason << "\n";
  }
};

}  // namespace

TableReport reproduce_table(const ReproduceOptions& o, const Scale& scale) {
  const Grid grid(o, scale);
  const auto paper = paper_values(o.table, o.configs);
  const fs::path out(o.out);
  make_directories("reproduce", out);
  if (!o.report_only) prepare_missing_data(grid.cells, o.data_dir, scale);

  TableReport report;
  const std::vector<Row> rows = grid.run(report);
  const Baselines baselines(rows, paper);
  TableText text(o, paper, baselines);
  text.header(scale, grid.seeds);
  for (const Row& row : rows) text.row(row);
  text.footer(rows, report, grid.total());
  write_file_atomic("reproduce", (out / "table.md").string(), text.md.str());
  write_file_atomic("reproduce", (out / "table.csv").string(), text.csv.str());
  report.markdown = text.md.str();
  report.cells = static_cast<int64_t>(rows.size());
  report.wall_s = grid.elapsed();
  std::printf("%s: %zu cells, %lld run(s) trained now -> %s, %s\n", o.table.c_str(), rows.size(),
              static_cast<long long>(report.runs_trained), (out / "table.md").string().c_str(),
              (out / "table.csv").string().c_str());
  return report;
}

}  // namespace relpos::cli
