// `relpos reproduce table1|table2|table3 [--scale tiny|small|paper] [--seeds N] [--device cpu|cuda]
// [--data-dir DIR] [--out DIR] [--only PATTERN] [--resume] [--configs DIR]`: runs the grid of
// configs behind a table of the FastRPB paper (each cell x seed one run directory under --out,
// skipped when its summary.json exists, so an interrupted grid resumes), then writes table.md and
// table.csv with our value beside the paper's for every cell. A cell whose data is missing says
// so (and how to get it) in the table instead of failing the grid.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/file_write.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"
#include "tools/relpos/reproduce.h"
#include "train/config.h"
#include "train/trainer.h"

namespace relpos::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: relpos reproduce table1|table2|table3|figure3 [--scale tiny|small|paper] [--seeds N]\n"
    "                        [--device cpu|cuda] [--data-dir DIR] [--out DIR] [--only PATTERN]\n"
    "                        [--resume] [--configs DIR] [--runs DIR]\n"
    "Runs the configs behind a table of the FastRPB paper (table1: LRA accuracy, table2: MNIST\n"
    "macro-F1 over seeds, table3: LRA training hours and peak memory) and writes table.md and\n"
    "table.csv to --out (default runs/reproduce/<table>-<scale>): our value beside the paper's.\n"
    "Finished cells are skipped, so a rerun resumes the grid; --resume also continues a cell\n"
    "that was interrupted from its last checkpoint. --data-dir holds one folder per dataset\n"
    "(mnist, listops, imdb, aan, cifar10; default data/). --only keeps the cells whose name\n"
    "(e.g. lra/text/linear_sikf_fastrpb) contains PATTERN (figure3: a list of bench variants).\n"
    "--runs DIR reports the cells' run directories found in DIR and trains nothing (without\n"
    "it: --out, whose missing cells are trained; for table3, the table1 grid of the same\n"
    "scale, runs/reproduce/table1-<scale>).\n"
    "figure3 runs `relpos bench attention` (tiny: N 256-1024, small: to 8K, paper: to 16K)\n"
    "and draws OUT/figure3.png with tools/plots.py. Scales: paper = the paper's\n"
    "hyperparameters; small = its architectures, 1,000 updates (LRA) or 3 epochs (MNIST);\n"
    "tiny = two narrow blocks, 300 updates at lr 2e-3 on 4,800 examples, minutes on a CPU.\n";

struct Options {
  std::string table, scale = "tiny", device = "cpu", data_dir = "data", out, only,
                     configs = "configs";
  std::string runs;  // where the cells' run directories are: --out, or table1's grid for table3
  bool report_only = false;  // --runs given: report what is there, train nothing
  int64_t seeds = 1;
  bool resume = false;
};

// What one run of a cell left: its summary.json values, or why there is none.
struct RunOutcome {
  bool done = false;
  std::string problem;  // "data missing: ..." / "failed: ..."
  double accuracy_best = 0, accuracy_last = 0, f1_best = 0, f1_last = 0, train_hours = 0,
         peak_gb = 0;
};

// The number after "key": in a flat-enough JSON text, at or after `from`.
double json_number(const std::string& text, const std::string& key, size_t from = 0) {
  const auto at = text.find("\"" + key + "\":", from);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + key.size() + 3, nullptr);
}

RunOutcome read_summary(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  RunOutcome r;
  r.done = true;
  const auto best = text.find("\"test_best\""), last = text.find("\"test_last\"");
  r.accuracy_best = json_number(text, "accuracy", best);
  r.f1_best = json_number(text, "macro_f1", best);
  r.accuracy_last = json_number(text, "accuracy", last);
  r.f1_last = json_number(text, "macro_f1", last);
  r.train_hours = json_number(text, "train_time_s") / 3600.0;
  r.peak_gb = json_number(text, "peak_memory_bytes") / 1e9;
  return r;
}

std::string mean_std(const std::vector<double>& xs, double scale, int digits) {
  if (xs.empty()) return "";
  double mean = 0;
  for (double x : xs) mean += x * scale;
  mean /= static_cast<double>(xs.size());
  if (xs.size() == 1) return fmt::format("{:.{}f}", mean, digits);
  double var = 0;
  for (double x : xs) var += (x * scale - mean) * (x * scale - mean);
  const double sd = std::sqrt(var / static_cast<double>(xs.size() - 1));
  return fmt::format("{:.{}f} ± {:.{}f}", mean, digits, sd, digits);
}

std::string paper_text(const PaperValue& p, bool table3) {
  if (table3) {
    const std::string hours = p.note.empty() ? p.hours + " h" : p.note;
    return p.peak_gb.empty() ? hours : hours + ", " + p.peak_gb + " GB";
  }
  if (!p.note.empty() && p.value.empty()) return p.note;
  return p.std.empty() ? p.value : p.value + " ± " + p.std;
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      RELPOS_CHECK(i + 1 < args.size(), "reproduce", "{} needs a value", a);
      return args[++i];
    };
    if (a == "--scale")
      o.scale = value();
    else if (a == "--seeds")
      o.seeds = parse_number<int64_t>("reproduce", a, value());
    else if (a == "--device")
      o.device = value();
    else if (a == "--data-dir")
      o.data_dir = value();
    else if (a == "--out")
      o.out = value();
    else if (a == "--only")
      o.only = value();
    else if (a == "--configs")
      o.configs = value();
    else if (a == "--runs") {
      o.runs = value();
      o.report_only = true;
    } else if (a == "--resume")
      o.resume = true;
    else if (a.rfind("--", 0) == 0)
      throw Error(fmt::format("[reproduce] unknown option '{}' (see relpos reproduce --help)", a));
    else if (o.table.empty())
      o.table = a;
    else
      throw Error(fmt::format("[reproduce] one table expected, got '{}' and '{}'", o.table, a));
  }
  RELPOS_CHECK(!o.table.empty(), "reproduce", "which table? table1, table2, table3 or figure3");
  RELPOS_CHECK(o.scale == "tiny" || o.scale == "small" || o.scale == "paper", "reproduce",
               "unknown scale '{}'; known: tiny, small, paper", o.scale);
  RELPOS_CHECK(o.seeds >= 1, "reproduce", "--seeds must be >= 1, got {}", o.seeds);
  RELPOS_CHECK(o.device == "cpu" || o.device == "cuda", "reproduce",
               "--device must be cpu or cuda, got '{}'", o.device);
  RELPOS_CHECK(o.device == "cpu" || cuda_available(), "reproduce",
               "--device cuda: no CUDA device is visible (use --device cpu)");
  RELPOS_CHECK(!o.report_only || fs::is_directory(o.runs), "reproduce",
               "--runs '{}' is not a folder of run directories", o.runs);
  if (o.out.empty()) o.out = "runs/reproduce/" + o.table + "-" + o.scale;
  // Table 3 reports the Table 1 runs: by default it reads (and completes) that grid.
  if (o.runs.empty()) o.runs = o.table == "table3" ? "runs/reproduce/table1-" + o.scale : o.out;
  return o;
}

// Trains one cell x seed into `dir` unless it is finished there.
RunOutcome run_cell(const Cell& cell, int64_t seed, const Options& o, const fs::path& dir) {
  if (fs::exists(dir / "summary.json")) return read_summary(dir / "summary.json");
  if (o.report_only) {
    RunOutcome r;
    r.problem = "not run: no finished run in " + dir.string();
    return r;
  }
  try {
    const RunConfig paper = load_config(cell.config);
    std::vector<std::string> overrides = scale_overrides(
        o.scale, paper.data.dataset, paper.model.positional.get<std::string>("type", "none"),
        paper.train.epochs > 0, seed);
    overrides.push_back("data.dir=" + (fs::path(o.data_dir) / paper.data.dataset).string());
    overrides.push_back("train.out=" + dir.string());
    overrides.push_back("device=" + o.device);
    TrainerOptions options;
    options.verbose = false;
    const fs::path last = dir / "checkpoints" / "last.h5";
    if (o.resume && fs::exists(last)) options.resume = last.string();
    Trainer trainer(load_config(cell.config, overrides), options);
    trainer.run();
    return read_summary(dir / "summary.json");
  } catch (const std::exception& e) {  // relpos errors, and running out of memory
    RunOutcome r;
    const std::string what = e.what();
    r.problem = (what.rfind("[data]", 0) == 0 ? "data missing: " : "failed: ") + what;
    return r;
  }
}

}  // namespace

int reproduce_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const Options o = parse(args);
  if (o.table == "figure3") return reproduce_figure3(o.scale, o.device, o.out, o.only);
  std::vector<Cell> cells = table_cells(o.table, o.configs);
  if (!o.only.empty())
    std::erase_if(cells, [&](const Cell& c) { return c.name.find(o.only) == std::string::npos; });
  RELPOS_CHECK(!cells.empty(), "reproduce", "no cell of {} matches '{}'", o.table, o.only);
  const auto paper = paper_values(o.table, o.configs);
  const bool table3 = o.table == "table3";
  const bool f1 = o.table == "table2";
  const fs::path out(o.out);
  fs::create_directories(out);

  struct Row {
    const Cell* cell;
    std::vector<RunOutcome> runs;
  };
  std::vector<Row> rows;
  const int64_t total = static_cast<int64_t>(cells.size()) * o.seeds;
  const auto started = std::chrono::steady_clock::now();
  int64_t k = 0, trained = 0;
  for (const Cell& cell : cells) {
    Row row{&cell, {}};
    for (int64_t seed = 0; seed < o.seeds; ++seed, ++k) {
      const fs::path dir = fs::path(o.runs) / cell.name / fmt::format("seed{}", seed);
      const bool finished = fs::exists(dir / "summary.json");
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const std::string eta =
          trained > 0 ? fmt::format(", ETA {:.0f} s", elapsed / static_cast<double>(trained) *
                                                          static_cast<double>(total - k))
                      : "";
      std::fprintf(stderr, "[reproduce] cell %lld/%lld: %s seed %lld%s%s\n",
                   static_cast<long long>(k + 1), static_cast<long long>(total), cell.name.c_str(),
                   static_cast<long long>(seed), finished ? " (done, skipped)" : "", eta.c_str());
      RunOutcome r = run_cell(cell, seed, o, dir);
      if (!finished && r.done) ++trained;
      if (!r.problem.empty()) std::fprintf(stderr, "[reproduce]   %s\n", r.problem.c_str());
      row.runs.push_back(std::move(r));
    }
    rows.push_back(std::move(row));
  }

  // The tables: one row per cell, ours beside the paper's.
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  const std::string ours_label = table3 ? "ours: train hours, peak GB"
                                 : f1   ? "ours: macro-F1 % (best val ckpt)"
                                        : "ours: accuracy % (best val ckpt)";
  const std::string last_label =
      table3 ? "" : (f1 ? "ours: macro-F1 % (last)" : "ours: accuracy % (last)");
  std::ostringstream md, csv;                                // written whole, checked, at the end
  std::map<std::string, std::vector<std::string>> problems;  // reason -> cells
  md << fmt::format("# {} reproduced: scale {}, device {}, {} seed(s), {}\n\n", o.table, o.scale,
                    o.device, o.seeds, date);
  md << "| task | model | pe | " << ours_label << (table3 ? "" : " | " + last_label)
     << " | paper |\n|---|---|---|---|---|" << (table3 ? "" : "---|") << "\n";
  csv << "task,model,pe,seeds_done,"
      << (table3 ? "train_hours,peak_gb" : "best_mean,best_std,last_mean,last_std")
      << ",paper,problem\n";
  for (const Row& row : rows) {
    std::vector<double> best, last, hours, gb;
    std::string problem;
    for (const RunOutcome& r : row.runs) {
      if (!r.done) {
        problem = r.problem;
        continue;
      }
      best.push_back(f1 ? r.f1_best : r.accuracy_best);
      last.push_back(f1 ? r.f1_last : r.accuracy_last);
      hours.push_back(r.train_hours);
      gb.push_back(r.peak_gb);
    }
    const Cell& c = *row.cell;
    const auto p = paper.find(c.task + "/" + c.model + "/" + c.pe);
    const std::string paper_cell = p == paper.end() ? "" : paper_text(p->second, table3);
    std::string ours;
    if (best.empty()) {
      // The table says what kind; the reasons are listed once under it.
      ours = problem.substr(0, problem.find(':'));
      problems[problem].push_back(c.name);
    } else if (table3)
      ours = mean_std(hours, 1.0, 4) + " h, " + mean_std(gb, 1.0, 3) + " GB";
    else
      ours = mean_std(best, 100.0, 2);
    md << "| " << c.task << " | " << c.model << " | " << c.pe << " | " << ours;
    if (!table3) md << " | " << (last.empty() ? "" : mean_std(last, 100.0, 2));
    md << " | " << paper_cell << " |\n";
    auto bare = [](const std::vector<double>& xs, double scale) {
      if (xs.empty()) return std::string(",");
      double m = 0, v = 0;
      for (double x : xs) m += x * scale / static_cast<double>(xs.size());
      for (double x : xs) v += (x * scale - m) * (x * scale - m);
      const double sd = xs.size() > 1 ? std::sqrt(v / static_cast<double>(xs.size() - 1)) : 0.0;
      return fmt::format("{},{}", m, sd);
    };
    csv << c.task << "," << c.model << "," << c.pe << "," << best.size() << ",";
    if (table3) {
      const std::string h = bare(hours, 1.0), g = bare(gb, 1.0);
      csv << h.substr(0, h.find(',')) << "," << g.substr(0, g.find(','));
    } else {
      csv << bare(best, 100.0) << "," << bare(last, 100.0);
    }
    std::string problem_csv = problem;
    std::replace(problem_csv.begin(), problem_csv.end(), ',', ';');
    std::string paper_csv = paper_cell;
    std::replace(paper_csv.begin(), paper_csv.end(), ',', ';');
    csv << "," << paper_csv << "," << (best.empty() ? problem_csv : "") << "\n";
  }
  if (!problems.empty()) {
    md << "\n## Cells without a result\n\n";
    for (const auto& [reason, names] : problems)
      md << "- " << names.size() << " cell(s), e.g. `" << names.front() << "`: " << reason << "\n";
  }
  write_file_atomic("reproduce", (out / "table.md").string(), md.str());
  write_file_atomic("reproduce", (out / "table.csv").string(), csv.str());
  std::printf("%s: %zu cells, %lld run(s) trained now -> %s, %s\n", o.table.c_str(), rows.size(),
              static_cast<long long>(trained), (out / "table.md").string().c_str(),
              (out / "table.csv").string().c_str());
  return 0;
}

}  // namespace relpos::cli
