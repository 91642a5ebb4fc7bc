// The subcommands of the relpos command line, each taking the arguments after its name and
// returning the exit status.
#pragma once

#include <string>
#include <vector>

namespace relpos::cli {

int data_command(const std::vector<std::string>& args);
int train_command(const std::vector<std::string>& args);
int eval_command(const std::vector<std::string>& args);
int generate_command(const std::vector<std::string>& args);
int reproduce_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int list_command(const std::vector<std::string>& args);
// `relpos bench index-first` (tools/relpos/bench_index_first.cpp).
int bench_index_first(const std::vector<std::string>& args);

// The registered attention variants, feature maps, positional encodings and models, a line each.
std::string registered_names_help();

}  // namespace relpos::cli
