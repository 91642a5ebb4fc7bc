// `relpos eval CHECKPOINT [--data-dir DIR] [--split test] [--device cpu|cuda] [--json]
// [--predictions FILE.h5] [--set key=value]...` (DESIGN §7): rebuilds the model from the
// configuration stored in the checkpoint, evaluates one split, prints its metrics.
#include <cstdio>

#include "core/error.h"
#include "tools/relpos/commands.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/distributed.h"
#include "train/json.h"
#include "train/task.h"
#include "train/training_state.h"

namespace relpos::cli {

constexpr const char* kEvalUsage =
    "usage: relpos eval CHECKPOINT [--data-dir DIR] [--split train|val|test] [--device cpu|cuda]\n"
    "                   [--json] [--predictions FILE.h5] [--set key.path=value]...\n"
    "Evaluates a checkpoint on one split (default test). --json prints one JSON object on\n"
    "stdout. --predictions writes HDF5 datasets: classifiers logits [n, classes] and labels [n]\n"
    "in dataset order; language models targets [n] and log_prob [n] (the log-probability of\n"
    "each target) in stream order. Language models take eval.tgt_len, eval.mem_len,\n"
    "eval.clamp_len and eval.same_length from --set (default: as configured).\n";

int eval_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kEvalUsage, stdout);
    return 0;
  }
  std::string checkpoint, split = "test", predictions;
  std::vector<std::string> overrides;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      RELPOS_CHECK(i + 1 < args.size(), "eval", "{} needs a value\n{}", a, kEvalUsage);
      return args[++i];
    };
    if (a == "--data-dir")
      overrides.push_back("data.dir=" + value());
    else if (a == "--split")
      split = value();
    else if (a == "--device")
      overrides.push_back("device=" + value());
    else if (a == "--set")
      overrides.push_back(value());
    else if (a == "--json")
      json = true;
    else if (a == "--predictions")
      predictions = value();
    else if (a.rfind("--", 0) == 0)
      throw Error(fmt::format("[eval] unknown option '{}'\n{}", a, kEvalUsage));
    else if (checkpoint.empty())
      checkpoint = a;
    else
      throw Error(fmt::format("[eval] one checkpoint expected, got '{}' and '{}'", checkpoint, a));
  }
  RELPOS_CHECK(!checkpoint.empty(), "eval", "no checkpoint given\n{}", kEvalUsage);

  // Under mpirun the ranks evaluate disjoint shards of the split; an error on any one ends the job.
  return run_job([&] {
    const CheckpointData data = read_checkpoint(checkpoint);
    const auto text = data.texts.find("config");
    RELPOS_CHECK(text != data.texts.end(), "eval", "'{}' holds no configuration", checkpoint);
    const RunConfig config = parse_config(text->second, checkpoint, overrides);
    const Device device = job_device(config.device, "eval");

    RELPOS_CHECK(split == "train" || split == "val" || split == "test", "eval",
                 "unknown split '{}'; known: train, val, test", split);
    const std::unique_ptr<Task> task = make_task(config, device, {split});
    restore_module(task->model(), data);
    // Predictions first: under mpirun they are refused before any evaluation runs.
    if (!predictions.empty()) task->write_predictions(split, predictions);
    const Metrics metrics = task->evaluate(split, 0);

    const int64_t step = data.ints.count("step") ? data.ints.at("step") : 0;
    if (!reports_results()) return 0;  // under mpirun the ranks share the split
    if (json) {
      std::printf("%s\n", metrics_json(metrics)
                              .add("checkpoint", checkpoint)
                              .add("split", split)
                              .add("step", step)
                              .add("name", config.name)
                              .str()
                              .c_str());
    } else {
      std::printf("%s on %s (%lld %s, step %lld): %s\n", config.name.c_str(), split.c_str(),
                  static_cast<long long>(metrics.count), metrics.unit.c_str(),
                  static_cast<long long>(step), describe_metrics(metrics).c_str());
    }
    return 0;
  });
}

}  // namespace relpos::cli
