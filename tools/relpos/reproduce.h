// `relpos reproduce`: the grids of runs behind the FastRPB paper's tables, at a chosen scale,
// with the paper's own numbers beside ours (configs/paper/*.csv).
//   table1  LRA accuracy: tasks x models x positional encodings (the cells the paper has)
//   table2  MNIST macro-F1: 5 models x (none, FastRPB 2D), mean ± std over seeds
//   table3  LRA training hours and peak memory of the table1 runs (their summary.json)
//   lm      character-level language models (configs/paper/lm.csv): test bpc over seeds, time,
//           memory, and bpc against the evaluation memory (reproduce_lm.cpp)
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "train/config.h"

namespace relpos::cli {

// One cell of a table: a config file and the row/column it fills.
struct Cell {
  std::string name;                    // "lra/text/linear_sikf_fastrpb", "mnist/original_none"
  std::string config;                  // the YAML file
  std::string task;                    // listops | text | retrieval | image | mnist
  std::string model;                   // original | linear_sikf | ...
  std::string pe;                      // none | fastrpb | fastrpb2d | sinspe | convspe | rpe
  std::vector<std::string> overrides;  // the cell's own key.path=value (lm.csv), after the scale's
};

// The paper's value of a cell: numbers, or a note (OOM, "too slow", N/A) in place of them.
struct PaperValue {
  std::string value, std, note;  // tables 1-2: accuracy / F1 in %
  std::string hours, peak_gb;    // table 3
};

// The cells of table1/table2/table3 in the paper's row order, from configs_dir/paper/tableN.csv
// (rows whose config file is missing, the paper's N/A cells, are left out), or of lm from lm.csv.
std::vector<Cell> table_cells(const std::string& table, const std::string& configs_dir);
// Keyed by "task/model/pe".
std::map<std::string, PaperValue> paper_values(const std::string& table,
                                               const std::string& configs_dir);

// A scale of configs/paper/scales.yaml: the --set overrides that turn a cell's paper config into
// a run of that scale. Rules apply in the file's order (later ones win); a rule applies to a
// cell when each of its `when` keys names the cell's value (one of a list).
struct ScaleRule {
  std::map<std::string, std::vector<std::string>>
      when;                      // task|model|pe|dataset|positional|schedule
  std::vector<std::string> set;  // key.path=value
  int line = 0;                  // in scales.yaml
};
// Where a scale reads a dataset: a folder under --data-dir, and the `relpos data prepare`
// options that make it when it is missing (generated data; empty: not made by reproduce).
struct ScaleData {
  std::string folder;
  bool prepare = false;
  std::map<std::string, std::string> options;  // --key value of `relpos data prepare`
};
struct Scale {
  std::string name, about;
  std::map<std::string, ScaleData> data;  // by data.dataset; others: the folder of that name
  std::map<std::string, int64_t> seeds;   // default --seeds per table ("table2": 3); else 1
  std::vector<std::string> figure3;       // `relpos bench attention` arguments for figure3
  std::vector<ScaleRule> rules;
};
// What a rule can test of a cell: the cell's names and its paper config's own values.
struct ScaleCell {
  std::string task, model, pe;
  std::string dataset;     // data.dataset
  std::string positional;  // model.positional.type
  std::string schedule;    // epochs | steps: how the paper config counts its training
};

// The facts of `cell`, whose paper config is `paper`.
ScaleCell scale_cell(const Cell& cell, const RunConfig& paper);

// The scales of configs_dir/paper/scales.yaml, in the file's order (errors name the line).
std::vector<Scale> load_scales(const std::string& configs_dir);
const Scale& find_scale(const std::vector<Scale>& scales, const std::string& name);
// Refuses a rule whose `when` names a value no cell can have (a typo matches nothing): the task,
// model and pe of the cells of table1, table2 and lm, a registered dataset or positional type (or
// none), epochs or steps.
void check_rule_values(const std::vector<Scale>& scales, const std::string& configs_dir);
// The overrides of `scale` for one cell, run with `seed` (the first override).
std::vector<std::string> scale_overrides(const Scale& scale, const ScaleCell& cell, int64_t seed);

// The folder `dataset` is read from at this scale (under data_dir).
std::filesystem::path data_folder(const std::string& data_dir, const Scale& scale,
                                  const std::string& dataset);
// Makes the scale's generated datasets that `cells` read and data_dir lacks.
void prepare_missing_data(const std::vector<Cell>& cells, const std::string& data_dir,
                          const Scale& scale);

// What `relpos reproduce` was asked (tools/relpos/reproduce_command.cpp parses it).
struct ReproduceOptions {
  std::string table;  // table1 | table2 | table3 | lm | figure3 | all
  std::string scale = "tiny", device = "cpu", data_dir = "data", out, only, configs = "configs";
  std::string runs;          // where the cells' run directories are: --out, or table1's for table3
  bool report_only = false;  // --runs given: report what is there, train nothing
  int64_t seeds = 0;         // 0: the scale's default for the table
  bool resume = false;
  int64_t jobs = 1;  // table2 on the CPU: runs trained at once, each a `relpos train` process
};

// One table run (or read) by reproduce_table.
struct TableReport {
  std::string markdown;  // table.md as written
  int64_t cells = 0, runs_done = 0, runs_trained = 0, runs_missing = 0;
  double wall_s = 0;   // this invocation's time
  double train_s = 0;  // the summed training time of every finished run, whenever it ran
};

// Trains the missing runs of table1|table2|table3 (each cell x seed one run directory under
// o.runs, skipped when its summary.json exists, so an interrupted grid resumes), one progress
// line per run on stderr with the grid's ETA, then writes o.out/table.md and table.csv: our
// values beside the paper's; table2 adds the paired with - without FastRPB differences, table3
// the time and memory ratios to linear SIKF beside the paper's.
TableReport reproduce_table(const ReproduceOptions& o, const Scale& scale);

// The language-model table (o.table == "lm"): the grid of runs as reproduce_table's, then each
// run's best checkpoint evaluated on the test split at 1x, 2x and 4x its training memory (kept in
// the run's memory_eval.json), then table.md, table.csv and figure.png (tools/plots.py lm-memory)
// in o.out.
TableReport reproduce_lm(const ReproduceOptions& o, const Scale& scale);

// `s` as one single-quoted shell word.
std::string quoted(const std::string& s);
// Runs tools/plots.py SUBCOMMAND OUT.png ARGS (ARGS quoted already) and says where the figure
// is; false, with the command that draws it later, when Python with matplotlib or the inputs
// are not there.
bool plot(const std::string& subcommand, const std::filesystem::path& png, const std::string& args);

// Figure 3: `relpos bench attention` with the scale's arguments, then tools/plots.py figure3.
// `only` is a --filter list of variant names (empty: all).
int reproduce_figure3(const Scale& scale, const std::string& device, const std::string& out,
                      const std::string& only);

}  // namespace relpos::cli
