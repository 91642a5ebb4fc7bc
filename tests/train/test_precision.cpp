// train.precision: bf16 (autograd/autocast.h) through the trainer: a bf16 run's checkpoint
// holds f32 parameters and optimizer state, evaluation runs the
// model as it trained (the task's test metrics reproduce from the checkpoint only under bf16),
// a precision that is not f32 or bf16 is refused by name, and a bf16 tensor by the checkpoint
// writer.
#include "tests/train/tiny_run.h"
#include "train/module_state.h"
#include "train/task.h"

using namespace relpos;

TEST_CASE("precision: a bf16 run's checkpoint stays f32; evaluation runs as it trained") {
  test::ScratchDir scratch;
  const std::string data = test::make_data(scratch);
  const RunConfig f32 = test::tiny_config(scratch, data, "f32");
  const RunConfig bf16 = test::tiny_config(scratch, data, "bf16", {"train.precision=bf16"});
  CHECK(bf16.yaml.find("precision: bf16") != std::string::npos);
  const RunSummary a = test::train(f32), b = test::train(bf16);
  // The products did round (how closely a bf16 run tracks: test_lm_training.cpp).
  CHECK(a.test_last.get("loss") != b.test_last.get("loss"));
  const CheckpointData saved = test::last_checkpoint(bf16);
  for (const auto& param : saved.params) {
    CAPTURE(param.first);
    CHECK(param.second.dtype() == DType::f32);
  }
  for (const auto& state : saved.optimizer)
    for (const auto& entry : state.second) {
      CAPTURE(state.first);
      CAPTURE(entry.first);
      CHECK(entry.second.dtype() != DType::bf16);
      if (entry.second.dim() > 0) CHECK(entry.second.dtype() == DType::f32);  // the moments
    }

  // Evaluation honours the run's precision: the checkpoint's test metrics are the summary's
  // under bf16, and not under f32.
  for (const RunConfig* config : {&bf16, &f32}) {
    RunConfig as_trained = bf16;
    as_trained.train.precision = config->train.precision;
    const auto task = make_task(as_trained, Device::cpu(), {"test"});
    restore_module(task->model(), saved, false);
    const double loss = task->evaluate("test", 0).get("loss");
    if (config == &bf16)
      CHECK(loss == b.test_last.get("loss"));
    else
      CHECK(loss != b.test_last.get("loss"));
  }
}

TEST_CASE("precision: only f32 and bf16, and bf16 only for an f32 model") {
  test::ScratchDir scratch;
  const std::string e =
      test::error_of([&] { test::tiny_config(scratch, "data", "x", {"train.precision=fp16"}); });
  CHECK(e == "[config] train.precision must be f32 or bf16, got 'fp16'");
  // An f64 model's products are never rounded: bf16 would silently change nothing.
  CHECK(test::error_of([&] {
          test::tiny_config(scratch, "data", "x", {"train.precision=bf16", "model.dtype=f64"});
        }) == "[config] train.precision bf16 rounds an f32 model's products; model.dtype is f64");
  CheckpointData data;
  data.params.emplace_back("w", zeros({2}, DType::bf16));
  CHECK(test::error_of([&] {
          write_checkpoint(scratch.file("c.h5"), data);
        }).find("'/params/w' is bf16, which checkpoints do not hold") != std::string::npos);
}
