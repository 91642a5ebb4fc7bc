// The LRA schedule (upstream LRA's create_learning_rate_scheduler, EXPERIMENTS.md "LRA
// hyperparameters"): a product of named factors, e.g. "constant * linear_warmup * rsqrt_decay":
//   constant: base lr;  linear_warmup: min(1, step/warmup);  rsqrt_decay: 1/√max(step, warmup);
//   rsqrt_normalized_decay: √warmup/√max(step, warmup);
//   cosine_decay: max(0, ½(1 + cos(π·(p mod 1)))), p = max(0, (step − warmup)/steps_per_cycle).
// Options: factors ("constant * linear_warmup * rsqrt_decay"), warmup_steps (1000),
// steps_per_cycle (required with cosine_decay).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "train/schedule.h"

namespace relpos {
namespace {

enum class Factor { constant, linear_warmup, rsqrt_decay, rsqrt_normalized_decay, cosine_decay };

std::vector<Factor> parse_factors(const Options& options, const std::string& text) {
  static const std::vector<std::pair<std::string, Factor>> known = {
      {"constant", Factor::constant},
      {"linear_warmup", Factor::linear_warmup},
      {"rsqrt_decay", Factor::rsqrt_decay},
      {"rsqrt_normalized_decay", Factor::rsqrt_normalized_decay},
      {"cosine_decay", Factor::cosine_decay}};
  std::vector<Factor> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word == "*") continue;
    auto it =
        std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == word; });
    RELPOS_CHECK(it != known.end(), options.where(),
                 "unknown factor '{}'; known: constant, linear_warmup, rsqrt_decay, "
                 "rsqrt_normalized_decay, cosine_decay",
                 word);
    out.push_back(it->second);
  }
  RELPOS_CHECK(!out.empty(), options.where(), "factors is empty");
  return out;
}

class LraSchedule : public Schedule {
 public:
  LraSchedule(const Options& options, const ScheduleRun& run)
      : Schedule(run.base_lr),
        factors_(parse_factors(options, options.get<std::string>(
                                            "factors", "constant * linear_warmup * rsqrt_decay"))),
        warmup_(options.get<int64_t>("warmup_steps", 1000)) {
    RELPOS_CHECK(warmup_ >= 0, options.where(), "warmup_steps must be >= 0, got {}", warmup_);
    RELPOS_CHECK(warmup_ > 0 || !run.starts_run ||
                     !std::count(factors_.begin(), factors_.end(), Factor::rsqrt_normalized_decay),
                 options.where(),
                 "rsqrt_normalized_decay is sqrt(warmup_steps / max(step, warmup_steps)): with "
                 "warmup_steps 0 the lr is 0 at every step; set warmup_steps > 0");
    if (std::count(factors_.begin(), factors_.end(), Factor::cosine_decay)) {
      cycle_ = options.require<int64_t>("steps_per_cycle");
      RELPOS_CHECK(cycle_ > 0, options.where(), "steps_per_cycle must be > 0, got {}", cycle_);
    }
  }

  double lr_at(int64_t step) const override {
    double s = static_cast<double>(step);
    double w = static_cast<double>(warmup_);
    double lr = 1.0;
    for (Factor f : factors_) {
      switch (f) {
        case Factor::constant:
          lr *= base_lr();
          break;
        case Factor::linear_warmup:
          lr *= warmup_factor(step, warmup_);
          break;
        case Factor::rsqrt_decay:
          lr /= std::sqrt(std::max(std::max(s, w), 1.0));
          break;
        case Factor::rsqrt_normalized_decay:
          lr *= std::sqrt(w) / std::sqrt(std::max(std::max(s, w), 1.0));
          break;
        case Factor::cosine_decay: {
          double p = std::max(0.0, (s - w) / static_cast<double>(cycle_));
          lr *= std::max(0.0, 0.5 * (1 + std::cos(std::numbers::pi * std::fmod(p, 1.0))));
          break;
        }
      }
    }
    return lr;
  }

 private:
  std::vector<Factor> factors_;
  int64_t warmup_;
  int64_t cycle_ = 0;
};

}  // namespace

RELPOS_REGISTER_SCHEDULE("lra", LraSchedule);

}  // namespace relpos
