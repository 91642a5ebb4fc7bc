// Outputs of the commands that read a file and write another (eval --predictions, export,
// import): an output that is one of the command's inputs would replace what it is computed from.
#pragma once

#include <initializer_list>
#include <string>

namespace relpos::cli {

// Refuses (exit 2, naming both) an output path that names the same file as one of `inputs`, or
// the same file as another output given in `inputs` (compared as paths when they do not exist).
void check_not_an_input(const std::string& option, const std::string& output,
                        std::initializer_list<std::string> inputs);

}  // namespace relpos::cli
