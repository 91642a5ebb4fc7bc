// The tables `relpos train --profile N` prints (autograd/profiler.h records them): per op kind
// and per module (each with its submodules), forward and backward, per update.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/profiler.h"
#include "core/device.h"
#include "layers/module.h"

namespace relpos {

struct ProfileRun {
  int64_t updates = 0;        // profiled updates
  int64_t warmup = 0;         // updates before them
  double plain_update_s = 0;  // an update's seconds without the profiler
  Device device = Device::cpu();
};

// Runs `update` run.updates times under the profiler, with `model`'s modules named by their
// paths, and returns the tables (the recorder is stopped whatever happens).
std::string profile_updates(const Module& model, const ProfileRun& run,
                            const std::function<void()>& update);

}  // namespace relpos
