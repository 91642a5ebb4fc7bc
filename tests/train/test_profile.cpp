// Trainer with TrainerOptions::profile_steps (`relpos train --profile N`): the tables of N
// profiled updates, per op kind and per module path, after warm-up and N plain updates; no
// checkpoint, validation or summary; a run too short for it is refused.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/harness.h"
#include "tests/train/tiny_run.h"

using namespace relpos;
using test::make_data;
using test::tiny_config;
using test::train;
namespace fs = std::filesystem;

TEST_CASE("profile: N updates per op and per module, forward and backward; nothing saved") {
  test::ScratchDir scratch;
  const std::string data = make_data(scratch);
  const RunConfig config = tiny_config(scratch, data, "profiled");
  TrainerOptions options;
  options.profile_steps = 3;
  const RunSummary r = train(config, options);
  CHECK(r.steps == 2 + 3 + 3);
  CHECK_FALSE(r.finished);
  const std::string& report = r.profile;
  INFO(report);
  for (const char* row : {"profile: 3 updates on cpu after 2 warm-up updates", "\nmatmul ",
                          "\n(data) ", "\n(optimizer) ", "\n(backward engine) ", "\n(model) ",
                          "\nencoder.layers.0.attn ", "\nencoder.layers.0.attn.q_proj ", "\nhead "})
    CHECK(report.find(row) != std::string::npos);
  CHECK(report.find("100.0%") != std::string::npos);  // the rows add up to the recorded time
  CHECK(report.find("device-to-host") == std::string::npos);  // CUDA only
  const fs::path out = config.train.out;
  CHECK_FALSE(fs::exists(out / "checkpoints" / "last.h5"));
  CHECK_FALSE(fs::exists(out / "summary.json"));

  options.profile_steps = 6;  // 2 + 6 + 6 > the run's 12 updates
  TrainerOptions again = options;
  again.overwrite = true;
  CHECK_THROWS_WITH_AS(train(config, again),
                       doctest::Contains("--profile 6 needs 2 warm-up updates and twice 6 more"),
                       Error);
}
