// The subcommands of the relpos command line. Each add_*_command defines its subcommand on the
// CLI11 app (options, help text) with a callback that runs it and leaves its exit status in
// `status`; `relpos --help` and `relpos SUB --help` are generated from those definitions.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace relpos::cli {

void add_train_command(CLI::App& app, int& status);
void add_eval_command(CLI::App& app, int& status);
void add_generate_command(CLI::App& app, int& status);
// `args`: the whole command line, quoted in report.md.
void add_reproduce_command(CLI::App& app, int& status, const std::vector<std::string>& args);
void add_data_command(CLI::App& app, int& status);
// `relpos bench attention` and `relpos bench index-first` (tools/relpos/bench_index_first.cpp).
void add_bench_command(CLI::App& app, int& status);
void add_bench_index_first(CLI::App& bench, int& status);
void add_list_command(CLI::App& app, int& status);
// `relpos import reference` and `relpos export reference`: a reference Transformer-XL in and out
// of a relpos checkpoint (tools/relpos/reference_commands.cpp).
void add_import_command(CLI::App& app, int& status);
void add_export_command(CLI::App& app, int& status);

// Runs the relpos command line on `args` (the words after the program name) and returns its
// exit status; --help prints the help of the command named and returns 0. A malformed command
// line throws relpos::Error("[command] what is wrong"), as every other user error.
int run_relpos(const std::vector<std::string>& args);

// The registered attention variants, feature maps, positional encodings and models, a line each.
std::string registered_names_help();

}  // namespace relpos::cli
