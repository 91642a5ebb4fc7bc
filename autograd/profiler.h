// The profiler of `relpos train --profile N` (train/profile_report.h prints its tables): where
// the time and the allocated bytes of training steps go, per op kind and per module, forward and
// backward, in the manner of PyTorch's profiler key_averages().
//
// Time is attributed sequentially on the thread that started the profiler: every mark ends an
// interval that goes to one row, so the rows add up to the recorded time exactly. A forward op's
// interval runs from the previous mark to the moment make_result records its output (its kernels
// and the glue since the previous op); a backward op's is its backward closure; time outside ops
// goes to the phase the trainer names ("data", "optimizer", "between forward ops", ...). On CUDA
// every mark synchronizes the device first, so an interval holds its kernels and not only their
// launches (the profiled steps run slower than unprofiled ones, as under any synchronizing
// profiler). Bytes are those the device's allocator handed out in the interval.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/device.h"

namespace relpos::profile {

struct Row {
  std::string name;
  int64_t forward_calls = 0, backward_calls = 0;
  double forward_s = 0, backward_s = 0;
  int64_t forward_bytes = 0, backward_bytes = 0;
};

struct Recording {
  std::vector<Row> ops;      // per op kind, and the phases outside ops in parentheses
  std::vector<Row> modules;  // per module path, its own ops only (the report adds up subtrees)
  double seconds = 0;        // from start() to stop(): the sum of every row of `ops`
  int64_t device_to_host_copies = 0;
};

// Starts recording on this thread. `modules` names the modules whose forward opens a
// ModuleScope, by address (Module::named_modules of the model).
void start(Device device, std::map<const void*, std::string> modules);
Recording stop();
bool active();

// The time since the previous mark goes to `row` (phase rows: outside any op).
void mark(const std::string& row);
// A forward op has produced its output (autograd's make_result): the interval is its forward.
void forward_op(const char* name);
// The path of the module scope open now (nullptr when not recording or outside every module):
// stored with each recorded node, so its backward goes to the module that ran its forward. The
// strings live as long as the process.
const std::string* current_module();

// Times the backward closure of the op `name` whose node was made inside `module`.
class BackwardScope {
 public:
  BackwardScope(const std::string& name, const std::string* module);
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;

 private:
  bool on_;
  const std::string& name_;
  const std::string* module_;
};

// Opens the module at `module` (an address given to start) for the forward ops inside it.
class ModuleScope {
 public:
  explicit ModuleScope(const void* module);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  bool open_;
};

}  // namespace relpos::profile
