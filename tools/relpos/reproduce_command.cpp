// `relpos reproduce table1|table2|table3|lm|figure3|all [--scale NAME] ...`: the FastRPB paper's
// tables and figures, and the language-model table, at a scale of configs/paper/scales.yaml
// (reproduce.h). `all` runs every
// table and figure into one folder and writes report.md: our tables beside the paper's, with the
// machine, the date, the wall time and the command.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/device.h"
#include "core/error.h"
#include "core/file_write.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"
#include "tools/relpos/reproduce.h"

namespace relpos::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFooter =
    "table1: LRA accuracy, table2: MNIST macro-F1 over seeds, with the paired with - without\n"
    "FastRPB differences, table3: LRA training time and peak memory, with the ratios to linear\n"
    "SIKF; lm: character-level language models (configs/paper/lm.csv), test bpc over seeds,\n"
    "time, memory, and bpc with 1x, 2x and 4x the training memory (figure.png). Each writes\n"
    "table.md and table.csv to --out (default runs/reproduce/<table>-<scale>): our value beside\n"
    "the paper's. `all` runs table2, table1, table3, figure3, figure1 and figure2 into --out\n"
    "(default runs/reproduce/all-<scale>) and writes report.md there. Finished runs are\n"
    "skipped, so a rerun resumes the grid; --resume also continues a run that was interrupted\n"
    "from its last checkpoint. --runs DIR reports the cells' run directories found in DIR and\n"
    "trains nothing (without it: --out, whose missing cells are trained; for table3, the table1\n"
    "grid of the same scale). figure3 runs `relpos bench attention` and draws OUT/figure3.png\n"
    "with tools/plots.py. --jobs N trains table2's runs N at a time on the CPU, each a\n"
    "`relpos train` process with 1/N of the threads (the same results: a run does not depend\n"
    "on its thread count), each cell's first run first, then the longest cells' runs first;\n"
    "its console goes to RUN_DIR.log, kept when the run fails. Tables\n"
    "that report training time (table1, whose runs table3 times; table3; lm) run one at a time.\n"
    "Scales (configs/paper/scales.yaml, under --configs):\n";

// The footer with the scales of `configs`/paper/scales.yaml, when they can be read.
std::string footer(const std::string& configs) {
  std::string text = kFooter;
  try {
    for (const Scale& s : load_scales(configs))
      text += fmt::format("  {:<6} {}\n", s.name, s.about);
  } catch (const Error& e) {
    text += fmt::format("  (not listed here: {})\n", e.what());
  }
  return text;
}

constexpr int64_t kMaxSeeds = 1000;  // a grid's seeds per cell

// What `relpos reproduce` was given, numbers as text.
struct ReproduceArgs {
  ReproduceOptions o;
  std::string seeds, jobs;
};

// The checks of the options and their defaults.
ReproduceOptions checked(const ReproduceArgs& a) {
  ReproduceOptions o = a.o;
  if (!a.seeds.empty()) o.seeds = parse_positive<int64_t>("reproduce", "--seeds", a.seeds);
  RELPOS_CHECK(o.seeds <= kMaxSeeds, "reproduce", "--seeds {}: at most {} runs per cell", o.seeds,
               kMaxSeeds);
  o.report_only = !o.runs.empty();
  if (!a.jobs.empty()) o.jobs = parse_positive<int64_t>("reproduce", "--jobs", a.jobs);
  RELPOS_CHECK(!o.report_only || (!o.resume && a.jobs.empty()), "reproduce",
               "--runs reports the runs found and trains nothing: {} does not apply",
               o.resume ? "--resume" : "--jobs");
  RELPOS_CHECK(o.jobs == 1 || o.table == "table2", "reproduce",
               "--jobs {}: only table2 trains runs at once; {} reports training times, which "
               "runs sharing the cores would distort",
               o.jobs, o.table == "all" ? "all (table1, table3)" : o.table);
  RELPOS_CHECK(o.jobs == 1 || o.device == "cpu", "reproduce",
               "--jobs {}: runs at once share the CPU's cores; on cuda they run one at a time",
               o.jobs);
  RELPOS_CHECK(o.table == "table1" || o.table == "table2" || o.table == "table3" ||
                   o.table == "lm" || o.table == "figure3" || o.table == "all",
               "reproduce", "unknown table '{}'; known: table1, table2, table3, lm, figure3, all",
               o.table);
  RELPOS_CHECK(o.device == "cpu" || o.device == "cuda", "reproduce",
               "--device must be cpu or cuda, got '{}'", o.device);
  RELPOS_CHECK(o.device == "cpu" || cuda_available(), "reproduce",
               "--device cuda: no CUDA device is visible (use --device cpu)");
  RELPOS_CHECK(!o.report_only || fs::is_directory(o.runs), "reproduce",
               "--runs '{}' is not a folder of run directories", o.runs);
  RELPOS_CHECK(!o.report_only || o.table != "all", "reproduce",
               "--runs reports one table; `all` reads its own --out");
  if (o.out.empty()) o.out = "runs/reproduce/" + o.table + "-" + o.scale;
  // Table 3 reports the Table 1 runs: by default it reads (and completes) that grid.
  if (o.runs.empty()) o.runs = o.table == "table3" ? "runs/reproduce/table1-" + o.scale : o.out;
  return o;
}

}  // namespace

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool plot(const std::string& subcommand, const fs::path& png, const std::string& args) {
  const std::string command =
      "/usr/bin/python3 tools/plots.py " + subcommand + " " + quoted(png.string()) + " " + args;
  if (fs::exists("tools/plots.py") && std::system((command + " >/dev/null 2>&1").c_str()) == 0) {
    std::printf("%s: %s\n", subcommand.c_str(), png.string().c_str());
    return true;
  }
  std::printf("%s: not drawn (needs python3-matplotlib and its inputs); to draw it:\n  %s\n",
              subcommand.c_str(), command.c_str());
  return false;
}

namespace {

// The best checkpoints of seed 0 of the cells `grid`/<model><suffix>, paired with the model.
std::vector<std::pair<std::string, std::string>> checkpoints(const fs::path& grid,
                                                             const std::string& suffix) {
  std::vector<std::pair<std::string, std::string>> found;
  for (const char* model :
       {"linear_sikf", "original", "linear_dpfp", "linear_relu", "linear_elu", "performer"}) {
    const fs::path ckpt = grid / (model + suffix) / "seed0" / "checkpoints" / "best.h5";
    if (fs::exists(ckpt)) found.emplace_back(ckpt.string(), model);
  }
  return found;
}

std::string machine_line() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return fmt::format("{}, {} cores", model, std::thread::hardware_concurrency());
}

// `all`: every table and figure of the scale into o.out, and report.md.
int reproduce_all(const ReproduceOptions& o, const Scale& scale,
                  const std::vector<std::string>& args) {
  const auto started = std::chrono::steady_clock::now();
  const fs::path out(o.out);
  make_directories("reproduce", out);
  std::ostringstream md;
  std::string command = "relpos";
  for (const auto& a : args) command += " " + a;
  md << "# The FastRPB paper reproduced at scale `" << scale.name << "`\n\n"
     << "- scale: " << scale.about << " (configs/paper/scales.yaml)\n"
     << "- command: `" << command << "`\n- machine: " << machine_line() << ", device " << o.device
     << "\n";
  std::ostringstream tables;
  double trained_s = 0;
  for (const char* table : {"table2", "table1", "table3"}) {
    ReproduceOptions t = o;
    t.table = table;
    t.out = (out / table).string();
    // Table 3 is the time and memory of the Table 1 runs.
    t.runs = (out / (t.table == "table3" ? "table1" : table)).string();
    const TableReport r = reproduce_table(t, scale);
    trained_s += r.wall_s;
    tables << "\n"
           << r.markdown << "\n(" << table << ": " << r.cells << " cells, " << r.runs_trained
           << " run(s) trained in this invocation, " << r.runs_missing << " without a result; "
           << fmt::format("{:.0f}", r.wall_s / 60) << " min)\n";
  }
  const fs::path figures = out / "figures";
  if (!fs::exists(figures / "bench.json")) reproduce_figure3(scale, o.device, figures.string(), "");
  std::string figure_lines;
  if (fs::exists(figures / "figure3.png")) figure_lines += "![Figure 3](figures/figure3.png)\n";
  // Figure 1: the learned 1-D weights of every ListOps FastRPB cell, one curve per model.
  std::string figure1_args;
  for (const auto& [path, model] : checkpoints(out / "table1" / "lra" / "listops", "_fastrpb"))
    figure1_args += " " + quoted(path + ":" + model);
  if (!figure1_args.empty() && plot("figure1", figures / "figure1.png", figure1_args))
    figure_lines += "![Figure 1](figures/figure1.png)\n";
  // Figure 2: one MNIST FastRPB 2D map (linear SIKF's when it is there), from pixel (6, 5):
  // the paper's (12, 10) on a 28x28 grid, on the 14x14 grid of the cpu scale.
  const auto maps = checkpoints(out / "table2" / "mnist", "_fastrpb2d");
  if (!maps.empty() &&
      plot("figure2", figures / "figure2.png", quoted(maps.front().first) + " --pixel 6,5"))
    figure_lines += "![Figure 2](figures/figure2.png)\n";
  // Learning curves of seed 0 of every cell trained: they say why a cell falls short.
  for (const char* table : {"table2", "table1"}) {
    std::string runs;
    for (const Cell& cell : table_cells(table, o.configs)) {
      const fs::path run = out / table / cell.name / "seed0";
      if (fs::exists(run / "metrics.jsonl"))
        runs += " " + quoted(run.string() + ":" + cell.model + " " + cell.pe);
    }
    const std::string png = fmt::format("curves-{}.png", table);
    if (!runs.empty() && plot("curves", figures / png, runs))
      figure_lines += fmt::format("![{} learning curves, seed 0](figures/{})\n", table, png);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  md << "- finished: " << date << "\n"
     << fmt::format("- wall time of this invocation: {:.1f} min (tables {:.1f} min)\n", wall / 60,
                    trained_s / 60)
     << tables.str() << "\n# Figures\n\n"
     << (figure_lines.empty() ? "(none drawn: see the lines printed by this command)\n"
                              : figure_lines);
  write_file_atomic("reproduce", (out / "report.md").string(), md.str());
  std::printf("all: %s (%.1f min)\n", (out / "report.md").string().c_str(), wall / 60);
  return 0;
}

int reproduce(const ReproduceArgs& a, const std::vector<std::string>& args) {
  const ReproduceOptions o = checked(a);
  const std::vector<Scale> scales = load_scales(o.configs);
  check_rule_values(scales, o.configs);
  const Scale& scale = find_scale(scales, o.scale);
  if (o.table == "figure3") return reproduce_figure3(scale, o.device, o.out, o.only);
  if (o.table == "all") return reproduce_all(o, scale, args);
  if (o.table == "lm")
    reproduce_lm(o, scale);
  else
    reproduce_table(o, scale);
  return 0;
}

}  // namespace

void add_reproduce_command(Command app, int& status, const std::vector<std::string>& args) {
  auto a = std::make_shared<ReproduceArgs>();
  ReproduceOptions& o = a->o;
  Command sub = app.add_subcommand(
      "reproduce",
      "Runs the configs behind a table or figure of the FastRPB paper, or the language-model "
      "table.");
  sub.footer([a] { return footer(a->o.configs); });  // --configs is read before --help
  sub.add_option("TABLE", o.table, "which table or figure")
      .type_name("table1|table2|table3|lm|figure3|all")
      .required();
  sub.add_option("--scale", o.scale, "a scale of scales.yaml (default tiny)").type_name("NAME");
  sub.add_option("--seeds", a->seeds, "seeds per cell (default: the scale's)").type_name("N");
  sub.add_option("--jobs", a->jobs, "table2: runs trained at once on the CPU (default 1)")
      .type_name("N");
  sub.add_option("--device", o.device, "cpu or cuda").type_name("cpu|cuda");
  sub.add_option("--data-dir", o.data_dir, "one folder per dataset (default data/)")
      .type_name("DIR");
  sub.add_option("--out", o.out, "where the tables go").type_name("DIR");
  sub.add_option("--only", o.only,
                 "the cells whose name contains PATTERN (figure3: bench variants)")
      .type_name("PATTERN");
  sub.add_flag("--resume", o.resume, "continues interrupted runs from their last checkpoint");
  sub.add_option("--configs", o.configs, "the configs folder (default configs)").type_name("DIR");
  sub.add_option("--runs", o.runs, "reports the runs found in DIR, trains nothing")
      .type_name("DIR");
  sub.callback([a, &status, &args] { status = reproduce(*a, args); });
}

}  // namespace relpos::cli
