// Schedules at chosen steps (0, warmup − 1, warmup, later, end) against their formulas, written
// out in f64 here; unknown schedule type, option and LRA factor refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "train/schedule.h"

using namespace relpos;

namespace {
// The error building `options` for a run of `run_steps` updates (0: not known), or "".
std::string error_of(const Options& options, int64_t run_steps = 0) {
  try {
    make_schedule(options, 1.0, run_steps);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST_CASE("schedule constant: the base lr at every step") {
  auto s = make_schedule(Options("schedule").set("type", "constant"), 3e-4);
  CHECK(s->lr_at(0) == 3e-4);
  CHECK(s->lr_at(123456) == 3e-4);
}

TEST_CASE("schedule linear_decay: warmup to lr, then linearly to 0 at total_steps") {
  auto s = make_schedule(Options("schedule")
                             .set("type", "linear_decay")
                             .set("warmup_steps", 10)
                             .set("total_steps", 110),
                         2.0);
  CHECK(s->lr_at(0) == 0.0);
  CHECK(s->lr_at(9) == doctest::Approx(2.0 * 9 / 10));
  CHECK(s->lr_at(10) == doctest::Approx(2.0));
  CHECK(s->lr_at(60) == doctest::Approx(2.0 * (110 - 60) / 100.0));
  CHECK(s->lr_at(110) == 0.0);
  CHECK(s->lr_at(200) == 0.0);  // clamped past the end
  auto plain =
      make_schedule(Options("schedule").set("type", "linear_decay").set("total_steps", 4), 1.0);
  CHECK(plain->lr_at(0) == 1.0);  // no warmup
  CHECK(plain->lr_at(1) == doctest::Approx(0.75));
}

TEST_CASE("schedule cosine: warmup then half-cosine to 0; cycles") {
  auto s = make_schedule(
      Options("schedule").set("type", "cosine").set("warmup_steps", 10).set("total_steps", 110),
      1.0);
  CHECK(s->lr_at(0) == 0.0);
  CHECK(s->lr_at(9) == doctest::Approx(0.9));
  CHECK(s->lr_at(10) == doctest::Approx(1.0));
  // Step 35: progress 0.25 -> ½(1 + cos(π/4)).
  CHECK(s->lr_at(35) == doctest::Approx(0.5 * (1 + std::cos(std::numbers::pi / 4))));
  CHECK(s->lr_at(60) == doctest::Approx(0.5));
  CHECK(s->lr_at(110) == doctest::Approx(0.0));
  // Two full cycles (cycles 2): back to 1 at progress 0.5, 0 at 0.25.
  auto c = make_schedule(
      Options("schedule").set("type", "cosine").set("total_steps", 100).set("cycles", 2.0), 1.0);
  CHECK(c->lr_at(50) == doctest::Approx(1.0));
  CHECK(c->lr_at(25) == doctest::Approx(0.0));
}

TEST_CASE("schedule lra: 0.0125 · min(1, step/warmup) · 1/√max(step, warmup)") {
  auto s = make_schedule(Options("schedule").set("type", "lra").set("warmup_steps", 1000), 0.0125);
  CHECK(s->lr_at(0) == 0.0);
  CHECK(s->lr_at(999) == doctest::Approx(0.0125 * 0.999 / std::sqrt(1000.0)));
  CHECK(s->lr_at(1000) == doctest::Approx(0.0125 / std::sqrt(1000.0)));
  CHECK(s->lr_at(4000) == doctest::Approx(0.0125 / std::sqrt(4000.0)));
}

TEST_CASE("schedule lra: constant · linear_warmup · cosine_decay with a cycle length") {
  auto s = make_schedule(Options("schedule")
                             .set("type", "lra")
                             .set("factors", "constant * linear_warmup * cosine_decay")
                             .set("warmup_steps", 468)
                             .set("steps_per_cycle", 35000),
                         2.5e-4);
  CHECK(s->lr_at(0) == 0.0);
  CHECK(s->lr_at(467) == doctest::Approx(2.5e-4 * 467 / 468.0));
  CHECK(s->lr_at(468) == doctest::Approx(2.5e-4));
  // Half a cycle after warmup: ½(1 + cos(π/2)) = ½.
  CHECK(s->lr_at(468 + 17500) == doctest::Approx(1.25e-4));
  // The cycle restarts: progress 1.25 -> ½(1 + cos(π/4)).
  CHECK(s->lr_at(468 + 43750) ==
        doctest::Approx(2.5e-4 * 0.5 * (1 + std::cos(std::numbers::pi / 4))));
}

TEST_CASE("schedule: unknown type, option and factor refused by name") {
  std::string type = error_of(Options("schedule").set("type", "cosin"));
  CHECK(type.find("unknown schedule 'cosin'") != std::string::npos);
  CHECK(type.find("linear_decay") != std::string::npos);
  std::string option =
      error_of(Options("schedule").set("type", "cosine").set("total_steps", 10).set("warmup", 2));
  CHECK(option.find("warmup") != std::string::npos);
  CHECK(option.find("unknown option") != std::string::npos);
  std::string factor =
      error_of(Options("schedule").set("type", "lra").set("factors", "constant * rsqrt"));
  CHECK(factor.find("'rsqrt'") != std::string::npos);
  CHECK(!error_of(Options("schedule").set("type", "lra").set("factors", "constant * cosine_decay"))
             .empty());  // steps_per_cycle required
  // sqrt(warmup / max(step, warmup)) with warmup 0 is 0 at every step: refused when a run starts.
  const Options zero_lr = Options("schedule")
                              .set("type", "lra")
                              .set("factors", "constant * rsqrt_normalized_decay")
                              .set("warmup_steps", 0);
  CHECK(error_of(zero_lr, 100).find("with warmup_steps 0 the lr is 0 at every step") !=
        std::string::npos);
  CHECK_NOTHROW(make_schedule(zero_lr, 1.0, 100, false));
}

TEST_CASE("schedule: a decaying schedule takes the run's length unless total_steps is set") {
  for (const char* type : {"linear_decay", "cosine"}) {
    CAPTURE(type);
    // The run's 100 updates: halfway at step 50.
    auto run = make_schedule(Options("schedule").set("type", type), 1.0, 100);
    CHECK(run->lr_at(50) == doctest::Approx(0.5));
    // total_steps written in the config wins over the run's length.
    auto own =
        make_schedule(Options("schedule").set("type", type).set("total_steps", 200), 1.0, 100);
    CHECK(own->lr_at(100) == doctest::Approx(0.5));
    CHECK(error_of(Options("schedule").set("type", type))
              .find("total_steps is required where the run's length is not known") !=
          std::string::npos);
    // Each bound names its keys, and where the total came from.
    CHECK(error_of(Options("schedule").set("type", type).set("warmup_steps", 100), 2) ==
          "[schedule] warmup_steps (100) must be below total_steps (2, the run's updates: "
          "train.steps or train.epochs): the decay would never start");
    CHECK(
        error_of(Options("schedule").set("type", type).set("total_steps", 5).set("warmup_steps", 5),
                 100) ==
        "[schedule] warmup_steps (5) must be below total_steps (5): the decay would never start");
    CHECK(error_of(Options("schedule").set("type", type).set("warmup_steps", -1), 100) ==
          "[schedule] warmup_steps must be >= 0, got -1");
    CHECK(error_of(Options("schedule").set("type", type).set("total_steps", 0), 100) ==
          "[schedule] total_steps must be > 0, got 0");
    // A decay that ended before the run held lr 0 (linear_decay) or climbed again (cosine) for
    // the rest of it; a configuration only read (eval's) is not refused for it.
    CHECK(error_of(Options("schedule").set("type", type).set("total_steps", 50), 100) ==
          "[schedule] total_steps (50) is below the run's 100 updates: the schedule would end "
          "before the run; leave total_steps out to span the run");
    CHECK_NOTHROW(make_schedule(Options("schedule").set("type", type).set("total_steps", 50), 1.0,
                                100, false));
  }
  // No mapping: constant.
  CHECK(make_schedule(Options("schedule"), 0.25, 100)->lr_at(99) == 0.25);
}
