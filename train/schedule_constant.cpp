// Constant schedule: lr_at(step) = base lr (torch's default with no scheduler). No options.
#include "train/schedule.h"

namespace relpos {
namespace {

class ConstantSchedule : public Schedule {
 public:
  ConstantSchedule(const Options&, const ScheduleRun& run) : Schedule(run.base_lr) {}
  double lr_at(int64_t) const override { return base_lr(); }
};

}  // namespace

RELPOS_REGISTER_SCHEDULE("constant", ConstantSchedule);

}  // namespace relpos
