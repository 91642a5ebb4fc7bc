// The grids of `relpos reproduce`, the paper's values and the scale overrides (reproduce.h).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tools/relpos/reproduce.h"

namespace relpos::cli {
namespace {

namespace fs = std::filesystem;

// Rows of a small CSV with a header line (no quoting: the paper files have none).
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  RELPOS_CHECK(in.good(), "reproduce", "cannot read '{}' (the paper's values)", path.string());
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  for (int64_t number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cells = split(line);
    RELPOS_CHECK(cells.size() == header.size(), "reproduce", "'{}' line {}: {} fields, expected {}",
                 path.string(), number, cells.size(), header.size());
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string table_file(const std::string& table) {
  RELPOS_CHECK(table == "table1" || table == "table2" || table == "table3", "reproduce",
               "unknown table '{}'; known: table1, table2, table3, figure3", table);
  return table + ".csv";
}

std::string field(const std::map<std::string, std::string>& row, const char* key) {
  auto it = row.find(key);
  return it == row.end() ? std::string() : it->second;
}

}  // namespace

std::vector<Cell> table_cells(const std::string& table, const std::string& configs_dir) {
  // Table 3 reports the runs of Table 1.
  const std::string source = table == "table3" ? "table1" : table;
  std::vector<Cell> cells;
  for (const auto& row : read_csv(fs::path(configs_dir) / "paper" / table_file(source))) {
    Cell c;
    c.task = source == "table2" ? "mnist" : field(row, "task");
    c.model = field(row, "model");
    c.pe = field(row, "pe");
    c.name = source == "table2" ? "mnist/" + c.model + "_" + c.pe
                                : "lra/" + c.task + "/" + c.model + "_" + c.pe;
    c.config = (fs::path(configs_dir) / (c.name + ".yaml")).string();
    if (fs::exists(c.config)) cells.push_back(std::move(c));
  }
  return cells;
}

std::map<std::string, PaperValue> paper_values(const std::string& table,
                                               const std::string& configs_dir) {
  std::map<std::string, PaperValue> values;
  for (const auto& row : read_csv(fs::path(configs_dir) / "paper" / table_file(table))) {
    PaperValue v{field(row, "value"), field(row, "std"), field(row, "note"), field(row, "hours"),
                 field(row, "peak_gb")};
    const std::string task = table == "table2" ? "mnist" : field(row, "task");
    values[task + "/" + field(row, "model") + "/" + field(row, "pe")] = v;
  }
  return values;
}

std::vector<std::string> scale_overrides(const std::string& scale, const std::string& dataset,
                                         const std::string& positional_type, bool epochs_based,
                                         int64_t seed) {
  std::vector<std::string> o{"seed=" + std::to_string(seed)};
  if (scale == "paper") return o;
  const bool mnist = dataset == "mnist" || dataset == "fashion-mnist";
  if (scale == "small") {
    // The paper's architecture, a fraction of its training.
    if (epochs_based) {
      o.push_back("train.epochs=3");
    } else {
      o.insert(o.end(), {"train.steps=1000", "train.eval_every=250"});
    }
    o.push_back("data.eval_limit=2000");
    return o;
  }
  RELPOS_CHECK(scale == "tiny", "reproduce", "unknown scale '{}'; known: tiny, small, paper",
               scale);
  // A few seconds per cell on a 2-core CPU: two narrow blocks (in one, FastRPB cannot reach the
  // CLS-pooled logits: its term is zero on the CLS row), short sequences, few examples.
  o.insert(o.end(),
           {"model.num_layers=2", "model.num_heads=2", "model.model_dim=32", "model.qkv_dim=0",
            "model.mlp_dim=64", "train.epochs=0", "train.steps=300", "train.eval_every=100",
            "train.patience=0", "data.batch_size=16", "data.eval_batch_size=64",
            "data.train_limit=4800", "data.eval_limit=256",
            // The paper's rates and warmups (up to 8,000 updates) would leave 300 updates idle.
            "optimizer.lr=2e-3", "schedule={type: linear_decay, warmup_steps: 10}"});
  if (mnist) {
    o.push_back("data.image_pool=4");  // 7x7 pixels
    if (positional_type == "fastrpb2d") o.push_back("model.positional.grid=[7,7]");
  } else if (dataset != "cifar10") {
    o.push_back("data.max_len=256");
  }
  return o;
}

}  // namespace relpos::cli
