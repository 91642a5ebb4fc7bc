// A checkpoint's model rebuilt for evaluation (`relpos eval`, `relpos reproduce lm`): the
// configuration it stores, with overrides, the task with the split's data, its parameters loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/config.h"
#include "train/task.h"

namespace relpos::cli {

struct CheckpointEval {
  CheckpointData data;
  int64_t step = 0;  // updates before it was written (0 when it records none: an imported model)
  RunConfig config;
  std::unique_ptr<Task> task;
};

// The configuration `data` stores, with `overrides` applied. Overrides may change how the model
// runs, not which model it is: a trunk size (num_layers, num_heads, model_dim, qkv_dim, mlp_dim,
// and stacked_hidden of stacked heads) other than the checkpoint's is refused before a model is
// built from it, and so is any other model key but max_len, vocab_size, index_first and those
// evaluation does not compute by (dropout, fused, algorithm, chunk, ...; eval_may_set). A
// model.max_len left to the data is the one the training run resolved, whatever the eval.* or
// data.* overrides: a language model evaluated with more keys than its position tables cover is
// refused by the model, naming the lengths.
RunConfig checkpoint_config(const char* who, const CheckpointData& data,
                            const std::string& checkpoint,
                            const std::vector<std::string>& overrides);

// Reads `checkpoint`, parses its configuration with `overrides` applied, builds the task with
// the data of `split` (train | val | test) on the configured device (job_device: under mpirun,
// the rank's), and loads the checkpoint's parameters into the model. `who` names the command in
// errors.
CheckpointEval load_for_eval(const char* who, const std::string& checkpoint,
                             const std::string& split, const std::vector<std::string>& overrides);

}  // namespace relpos::cli
