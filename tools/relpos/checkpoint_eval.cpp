// A checkpoint's model rebuilt for evaluation (checkpoint_eval.h).
#include "tools/relpos/checkpoint_eval.h"

#include "core/error.h"
#include "train/distributed.h"
#include "train/training_state.h"

namespace relpos::cli {

CheckpointEval load_for_eval(const char* who, const std::string& checkpoint,
                             const std::string& split, const std::vector<std::string>& overrides) {
  CheckpointEval e;
  e.data = read_checkpoint(checkpoint);
  const auto text = e.data.texts.find("config");
  RELPOS_CHECK(text != e.data.texts.end(), who, "'{}' holds no configuration", checkpoint);
  e.config = parse_config(text->second, checkpoint, overrides);
  const Device device = job_device(e.config.device, who);
  RELPOS_CHECK(split == "train" || split == "val" || split == "test", who,
               "unknown split '{}'; known: train, val, test", split);
  e.task = make_task(e.config, device, {split});
  e.task->check_checkpoint(e.data, checkpoint);
  restore_module(e.task->model(), e.data, false);
  return e;
}

}  // namespace relpos::cli
