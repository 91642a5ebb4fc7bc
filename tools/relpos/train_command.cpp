// `relpos train CONFIG.yaml [--set key=value]... [--out DIR] [--device cpu|cuda] [--resume CKPT]
// [--stop-at-step N]`
// (DESIGN §7): trains, then prints one line of final metrics on stdout.
#include <cstdio>

#include "core/error.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"
#include "train/config.h"
#include "train/distributed.h"
#include "train/trainer.h"

namespace relpos::cli {

constexpr const char* kTrainUsage =
    "usage: relpos train CONFIG.yaml [--set key.path=value]... [--out DIR] [--device cpu|cuda]\n"
    "                    [--resume CHECKPOINT] [--allow-config-change] [--stop-at-step N]\n"
    "                    [--quiet]\n"
    "Trains the model of CONFIG, writing config.yaml, metrics.jsonl, log.txt,\n"
    "checkpoints/{last,best}.h5 and summary.json to the run directory (train.out, default\n"
    "runs/<name>). --set overrides any key (value read as YAML: --set "
    "model.positional.grid=[14,14]);\n"
    "--resume continues a run from its checkpoint; a configuration that changes its course\n"
    "(steps, model, optimizer, ...) is refused unless --allow-config-change.\n"
    "--stop-at-step N ends this session after update N with checkpoints/last.h5 (no validation\n"
    "or test), as for a job time limit; a later --resume continues the same course.\n";

int train_command(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kTrainUsage, stdout);
    return 0;
  }
  std::string config_path;
  std::vector<std::string> overrides;
  TrainerOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      RELPOS_CHECK(i + 1 < args.size(), "train", "{} needs a value\n{}", a, kTrainUsage);
      return args[++i];
    };
    if (a == "--set")
      overrides.push_back(value());
    else if (a == "--out")
      overrides.push_back("train.out=" + value());
    else if (a == "--device")
      overrides.push_back("device=" + value());
    else if (a == "--resume")
      options.resume = value();
    else if (a == "--quiet")
      options.verbose = false;
    else if (a == "--allow-config-change")
      options.allow_config_change = true;
    else if (a == "--stop-at-step")
      options.stop_at_step = parse_positive<int64_t>("train", a, value());
    else if (a.rfind("--", 0) == 0)
      throw Error(fmt::format("[train] unknown option '{}'\n{}", a, kTrainUsage));
    else if (config_path.empty())
      config_path = a;
    else
      throw Error(
          fmt::format("[train] one config file expected, got '{}' and '{}'", config_path, a));
  }
  RELPOS_CHECK(!config_path.empty(), "train", "no config file given\n{}", kTrainUsage);
  // Under mpirun every rank trains (data parallel); an error on any one ends the job.
  return run_job([&] {
    Trainer trainer(load_config(config_path, overrides), options);
    const RunSummary r = trainer.run();
    if (!r.primary) return 0;
    if (!r.finished) {
      std::printf("stopped at step %lld as asked; continue with --resume %s/checkpoints/last.h5\n",
                  static_cast<long long>(r.steps), r.run_dir.c_str());
      return 0;
    }
    // The selection metric first: "test accuracy 0.9430 (last) 0.9360 (best), ...".
    std::string line =
        fmt::format("{}: test {} {:.4f} (last) {:.4f} (best)", trainer.model().config().type,
                    r.metric, r.test_last.get(r.metric), r.test_best.get(r.metric));
    for (const auto& [name, value] : r.test_last.values)
      if (name != r.metric)
        line += fmt::format(", {} {:.4f} / {:.4f}", name, value, r.test_best.get(name));
    std::printf("%s, %lld steps, %.1f s, peak %.1f MB, run %s\n", line.c_str(),
                static_cast<long long>(r.steps), r.wall_time_s,
                static_cast<double>(r.peak_memory_bytes) / 1e6, r.run_dir.c_str());
    return 0;
  });
}

}  // namespace relpos::cli
