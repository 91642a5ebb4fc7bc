// `relpos train CONFIG.yaml [--set key=value]... [--out DIR] [--device cpu|cuda] [--resume CKPT]
// [--stop-at-step N]` (DESIGN §7): trains, then prints one line of final metrics on stdout.
#include <cstdio>
#include <memory>
#include <optional>

#include "core/error.h"
#include "datasets/prepare_tools.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"
#include "train/config.h"
#include "train/distributed.h"
#include "train/stop_signals.h"
#include "train/trainer.h"

namespace relpos::cli {

namespace {

constexpr const char* kTrainFooter =
    "Writes config.yaml, metrics.jsonl, log.txt, checkpoints/{last,best}.h5 (and step-N.h5\n"
    "every train.save_every updates, the newest train.keep_last kept) and summary.json to the\n"
    "run directory (train.out, default runs/<name>); train.init_from starts from another run's\n"
    "parameters (fine-tuning). --set overrides any key (value read as\n"
    "YAML: --set model.positional.grid=[14,14]); --resume continues a run from its checkpoint; a\n"
    "configuration that changes its course (steps, model, optimizer, eval, ...) is refused\n"
    "unless --allow-config-change. --stop-at-step N ends this session after update N with\n"
    "checkpoints/last.h5 (after the validation due at N; no test), as for a job time limit; a\n"
    "later --resume continues the same course. Ctrl-C (SIGINT) or SIGTERM while it trains ends\n"
    "the session the same way after the update under way (exit status 130 / 143); a second one\n"
    "ends it at once. --profile N trains 2 warm-up updates, N timed plainly and N under\n"
    "the profiler, prints the time and allocated bytes per op kind and per module, forward and\n"
    "backward (on CUDA also the device-to-host copies), and writes no run directory.\n"
    "--set train.precision=bf16 rounds the operands of the model's matrix products and of its\n"
    "fused attention, and the MLP's hidden activation, to bfloat16 and computes in f32\n"
    "(autocast); parameters, gradients, optimizer state, checkpoints, the other activations and\n"
    "everything else stay f32; eval and generate follow the run.";

struct TrainArgs {
  std::string config_path, out, device, stop_at_step, profile;
  std::vector<std::string> overrides;
  TrainerOptions options;
};

int train(TrainArgs& a) {
  if (!a.out.empty()) a.overrides.push_back(text_override("train.out", a.out));
  if (!a.device.empty()) a.overrides.push_back(text_override("device", a.device));
  check_keys_once("train", a.overrides);
  a.options.stop_on_signals = true;
  if (!a.stop_at_step.empty())
    a.options.stop_at_step = parse_positive<int64_t>("train", "--stop-at-step", a.stop_at_step);
  std::optional<TempDir> scratch;
  if (!a.profile.empty()) {
    a.options.profile_steps = parse_positive<int64_t>("train", "--profile", a.profile);
    scratch.emplace("relpos_profile");  // the run's files go nowhere a user keeps
    a.overrides.push_back(text_override("train.out", scratch->path.string()));
  }
  // Under mpirun every rank trains (data parallel); an error on any one ends the job.
  return run_job([&] {
    Trainer trainer(load_config(a.config_path, a.overrides), a.options);
    const RunSummary r = trainer.run();
    if (!r.primary) return 0;
    if (!r.profile.empty()) {
      std::fputs(r.profile.c_str(), stdout);
      return 0;
    }
    if (!r.finished) {
      const std::string how =
          r.stop_signal != 0 ? fmt::format("by {}", signal_name(r.stop_signal)) : "as asked";
      std::printf("stopped at step %lld %s; continue with --resume %s/checkpoints/last.h5\n",
                  static_cast<long long>(r.steps), how.c_str(), r.run_dir.c_str());
      return r.stop_signal != 0 ? 128 + r.stop_signal : 0;  // the shell's status of a signal
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

}  // namespace

void add_train_command(Command app, int& status) {
  auto a = std::make_shared<TrainArgs>();
  Command sub = app.add_subcommand("train", "Trains the model of a config file.");
  sub.footer(kTrainFooter);
  sub.add_option("CONFIG", a->config_path, "the run's YAML config").required();
  sub.add_option("--set", a->overrides, "overrides a config key (repeatable)")
      .type_name("KEY.PATH=VALUE")
      .allow_extra_args(false);
  const Option out =
      sub.add_option("--out", a->out, "the run directory (train.out)").type_name("DIR");
  sub.add_option("--device", a->device, "cpu or cuda (device)").type_name("cpu|cuda");
  const Option resume =
      sub.add_option("--resume", a->options.resume, "continues from this checkpoint")
          .type_name("CHECKPOINT");
  // Neither is silently ignored: one only means something with --resume, the other without.
  sub.add_flag("--allow-config-change", a->options.allow_config_change,
               "resumes even if the configuration changes the run's course")
      .needs(resume);
  const Option overwrite =
      sub.add_flag("--overwrite", a->options.overwrite,
                   "starts afresh in a run directory that holds a run, removing its files")
          .excludes(resume);
  const Option stop_at_step =
      sub.add_option("--stop-at-step", a->stop_at_step, "ends this session after update N")
          .type_name("N");
  // A profile writes no run and runs its own count of updates: the run's options are refused.
  sub.add_option("--profile", a->profile,
                 "prints where N updates' time and memory go (per op and module), trains no run")
      .type_name("N")
      .excludes(out)
      .excludes(overwrite)
      .excludes(stop_at_step);
  sub.add_flag_callback(
      "--quiet", [a] { a->options.verbose = false; }, "warnings and errors only on stderr");
  sub.callback([a, &status] { status = train(*a); });
}

}  // namespace relpos::cli
