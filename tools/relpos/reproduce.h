// `relpos reproduce`: the grids of runs behind the FastRPB paper's tables, at a chosen scale,
// with the paper's own numbers beside ours (configs/paper/*.csv).
//   table1  LRA accuracy: tasks x models x positional encodings (the cells the paper has)
//   table2  MNIST macro-F1: 5 models x (none, FastRPB 2D), mean ± std over seeds
//   table3  LRA training hours and peak memory of the table1 runs (their summary.json)
#pragma once

#include <map>
#include <string>
#include <vector>

namespace relpos::cli {

// One cell of a table: a config file and the row/column it fills.
struct Cell {
  std::string name;    // "lra/text/linear_sikf_fastrpb", "mnist/original_none"
  std::string config;  // the YAML file
  std::string task;    // listops | text | retrieval | image | mnist
  std::string model;   // original | linear_sikf | ...
  std::string pe;      // none | fastrpb | fastrpb2d | sinspe | convspe | rpe
};

// The paper's value of a cell: numbers, or a note (OOM, "too slow", N/A) in place of them.
struct PaperValue {
  std::string value, std, note;  // tables 1-2: accuracy / F1 in %
  std::string hours, peak_gb;    // table 3
};

// The cells of table1/table2/table3 in the paper's row order, from configs_dir/paper/tableN.csv
// (rows whose config file is missing, the paper's N/A cells, are left out).
std::vector<Cell> table_cells(const std::string& table, const std::string& configs_dir);
// Keyed by "task/model/pe".
std::map<std::string, PaperValue> paper_values(const std::string& table,
                                               const std::string& configs_dir);

// --set overrides that turn a paper-scale config into `scale` (tiny | small | paper) for a run
// of `seed`; `dataset` and `positional_type` are the config's own.
std::vector<std::string> scale_overrides(const std::string& scale, const std::string& dataset,
                                         const std::string& positional_type, bool epochs_based,
                                         int64_t seed);

// Figure 3: `relpos bench attention` at the scale's lengths, then tools/plots.py figure3.
// `only` is a --filter list of variant names (empty: all).
int reproduce_figure3(const std::string& scale, const std::string& device, const std::string& out,
                      const std::string& only);

}  // namespace relpos::cli
