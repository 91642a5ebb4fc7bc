// The grids of `relpos reproduce` and the paper's values (reproduce.h).
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
  RELPOS_CHECK(table == "table1" || table == "table2" || table == "table3" || table == "lm",
               "reproduce", "unknown table '{}'; known: table1, table2, table3, lm, figure3",
               table);
  return table + ".csv";
}

std::string field(const std::map<std::string, std::string>& row, const char* key) {
  auto it = row.find(key);
  return it == row.end() ? std::string() : it->second;
}

// A row of lm.csv: model, pe, the config file under configs_dir and the cell's own overrides
// (separated by spaces).
Cell lm_cell(const std::map<std::string, std::string>& row, const std::string& configs_dir) {
  Cell c;
  c.task = "lm";
  c.model = field(row, "model");
  c.pe = field(row, "pe");
  c.name = "lm/" + c.model;
  c.config = (fs::path(configs_dir) / field(row, "config")).string();
  std::stringstream overrides(field(row, "set"));
  for (std::string o; overrides >> o;) c.overrides.push_back(o);
  RELPOS_CHECK(fs::exists(c.config), "reproduce", "lm.csv names '{}', which does not exist",
               c.config);
  return c;
}

}  // namespace

std::vector<Cell> table_cells(const std::string& table, const std::string& configs_dir) {
  // Table 3 reports the runs of Table 1.
  const std::string source = table == "table3" ? "table1" : table;
  std::vector<Cell> cells;
  for (const auto& row : read_csv(fs::path(configs_dir) / "paper" / table_file(source))) {
    if (source == "lm") {
      cells.push_back(lm_cell(row, configs_dir));
      continue;
    }
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

}  // namespace relpos::cli
