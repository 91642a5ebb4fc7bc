// The tables `relpos train --profile N` prints (autograd/profiler.h records them): per op kind
// and per module (each with its submodules), forward and backward, per update.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/profiler.h"
#include "core/device.h"

namespace relpos {

struct ProfileRun {
  int64_t updates = 0;        // profiled updates
  int64_t warmup = 0;         // updates before them
  double plain_update_s = 0;  // an update's seconds without the profiler (mean)
  Device device = Device::cpu();
  std::vector<std::string> module_order;  // module paths in tree order ("(model)" first)
};

std::string profile_report(const profile::Recording& recording, const ProfileRun& run);

}  // namespace relpos
