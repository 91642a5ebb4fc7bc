// `relpos eval CHECKPOINT [--data-dir DIR] [--split test] [--device cpu|cuda] [--json]
// [--predictions FILE.h5] [--set key=value]...` (DESIGN §7): rebuilds the model from the
// configuration stored in the checkpoint, evaluates one split, prints its metrics.
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/comm/comm.h"
#include "core/file_write.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/checkpoint_eval.h"
#include "tools/relpos/commands.h"
#include "tools/relpos/output_checks.h"
#include "train/config.h"
#include "train/distributed.h"
#include "train/json.h"

namespace relpos::cli {

namespace {

constexpr const char* kEvalFooter =
    "--json prints one JSON object on stdout. --predictions writes HDF5 datasets: classifiers\n"
    "logits [n, classes] and labels [n] in dataset order; language models targets [n] and\n"
    "log_prob [n] (the log-probability of each target) in stream order, in the model's dtype\n"
    "(f32 or f64). Language models take eval.tgt_len and eval.mem_len (transformer_xl also\n"
    "eval.clamp_len and eval.same_length) from --set (default: as configured); a checkpoint\n"
    "keeps the model.max_len it trained with; --set of a model key that makes another model\n"
    "(model.norm, model.attention.type, a size) is refused; --set model.dtype=f64 runs an f32\n"
    "checkpoint's weights in double precision. A non-finite loss is printed with a warning on\n"
    "stderr; --set debug.detect_anomaly=true then names the op that produced the values.";

struct EvalArgs {
  std::string checkpoint, split = "test", predictions, data_dir, device;
  std::vector<std::string> overrides;
  bool json = false;
};

int eval(EvalArgs& a) {
  if (!a.data_dir.empty()) a.overrides.push_back(text_override("data.dir", a.data_dir));
  if (!a.device.empty()) a.overrides.push_back(text_override("device", a.device));
  check_keys_once("eval", a.overrides);
  const std::string &checkpoint = a.checkpoint, &split = a.split;
  // Under mpirun the ranks evaluate disjoint shards of the split; an error on any one ends the job.
  return run_job([&] {
    // A --predictions path that cannot be written is refused before the model is built (under
    // mpirun the task refuses predictions themselves).
    if (!a.predictions.empty() && !comm::distributed()) {
      check_not_an_input("predictions", a.predictions, {a.checkpoint});
      check_write("predictions", a.predictions);
    }
    const CheckpointEval e = load_for_eval("eval", checkpoint, split, a.overrides);
    const int64_t step = e.step;
    const RunConfig& config = e.config;
    Task* task = e.task.get();
    // Predictions first: under mpirun they are refused before any evaluation runs.
    if (!a.predictions.empty()) task->write_predictions(split, a.predictions);
    const Metrics metrics = task->evaluate(split, 0);
    if (!std::isfinite(metrics.get("loss")) && reports_results())
      std::fprintf(stderr,
                   "relpos: [eval] warning: the loss is %g: the model gives non-finite values on "
                   "this split (--set debug.detect_anomaly=true names the op that produced them)\n",
                   metrics.get("loss"));

    if (!reports_results()) return 0;  // under mpirun the ranks share the split
    if (a.json) {
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

}  // namespace

void add_eval_command(Command app, int& status) {
  auto a = std::make_shared<EvalArgs>();
  Command sub = app.add_subcommand(
      "eval", "Evaluates a checkpoint on one split, with the configuration stored in it.");
  sub.footer(kEvalFooter);
  sub.add_option("CHECKPOINT", a->checkpoint, "a checkpoint of relpos train").required();
  sub.add_option("--data-dir", a->data_dir, "where the dataset is (data.dir)").type_name("DIR");
  sub.add_option("--split", a->split, "the split evaluated (default test)")
      .type_name("train|val|test");
  sub.add_option("--device", a->device, "cpu or cuda (device)").type_name("cpu|cuda");
  sub.add_flag("--json", a->json, "one JSON object on stdout");
  sub.add_option("--predictions", a->predictions, "writes the predictions to this HDF5 file")
      .type_name("FILE.h5");
  sub.add_option("--set", a->overrides, "overrides a config key (repeatable)")
      .type_name("KEY.PATH=VALUE")
      .allow_extra_args(false);
  sub.callback([a, &status] { status = eval(*a); });
}

}  // namespace relpos::cli
