// Fine-tuning (train.init_from): a fresh run starts from another run's parameters, chosen by
// name, while its optimizer state, schedule and position start anew.
#pragma once

#include <string>
#include <vector>

#include "layers/module.h"
#include "train/checkpoint.h"

namespace relpos {

// Whether the dotted parameter `name` is chosen by `patterns`: it matches a glob ("*", "?",
// "[...]"; fnmatch, '.' is an ordinary character) and no "!glob" after the last match.
bool parameter_chosen(const std::string& name, const std::vector<std::string>& patterns);

// Sets every parameter of `module` that `patterns` choose from the checkpoint `data` (read from
// `source`), cast to the parameter's dtype, through Var::set_value. Everything is checked before
// anything changes: a chosen parameter missing from the checkpoint or of another shape, and a
// pattern that chooses nothing, are errors naming the parameter or pattern. Buffers, generators
// and the checkpoint's optimizer state are not taken. Returns the names taken, in module order.
std::vector<std::string> init_parameters(Module& module, const CheckpointData& data,
                                         const std::vector<std::string>& patterns,
                                         const std::string& source);

}  // namespace relpos
