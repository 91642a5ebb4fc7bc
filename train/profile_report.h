// The tables `relpos train --profile N` prints (autograd/profiler.h records them): per op kind
// and per module (each with its submodules), forward and backward, per update.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autograd/profiler.h"
#include "core/device.h"
#include "layers/module.h"

namespace relpos {

struct ProfileRun {
  int64_t updates = 0;        // profiled updates
  int64_t warmup = 0;         // updates before them
  double plain_update_s = 0;  // an update's seconds without the profiler (mean)
  Device device = Device::cpu();
  std::vector<std::string> module_order;  // module paths in tree order ("(model)" first)
};

// The model's modules by address, for profile::start ("(model)" for the root); their paths in
// tree order go to run.module_order.
std::map<const void*, std::string> profiled_modules(const Module& model, ProfileRun& run);

std::string profile_report(const profile::Recording& recording, const ProfileRun& run);

}  // namespace relpos
