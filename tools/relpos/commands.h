// The subcommands of the relpos command line. Each add_*_command defines its subcommand on the
// program's command (options, help text; tools/command_line/command_line.h) with a callback that
// runs it and leaves its exit status in `status`; `relpos --help` and `relpos SUB --help` are
// generated from those definitions.
#pragma once

#include <string>
#include <vector>

#include "tools/command_line/command_line.h"

namespace relpos::cli {

void add_train_command(Command app, int& status);
void add_eval_command(Command app, int& status);
void add_generate_command(Command app, int& status);
// `args`: the whole command line, quoted in report.md.
void add_reproduce_command(Command app, int& status, const std::vector<std::string>& args);
void add_data_command(Command app, int& status);
// `relpos bench attention` and `relpos bench index-first` (tools/relpos/bench_index_first.cpp).
void add_bench_command(Command app, int& status);
void add_bench_index_first(Command bench, int& status);
void add_list_command(Command app, int& status);
// `relpos import reference` and `relpos export reference`: a reference Transformer-XL in and out
// of a relpos checkpoint (tools/relpos/reference_commands.cpp).
void add_import_command(Command app, int& status);
void add_export_command(Command app, int& status);

// Runs the relpos command line on `args` (the words after the program name) and returns its
// exit status; --help prints the help of the command named and returns 0. A malformed command
// line throws relpos::Error("[command] what is wrong"), as every other user error.
int run_relpos(const std::vector<std::string>& args);

// The registered attention variants, feature maps, positional encodings and models, a line each.
std::string registered_names_help();

}  // namespace relpos::cli
