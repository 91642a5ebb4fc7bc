// Checks of a device's inputs that would wait for the device to answer (the CUDA index and
// cross-entropy kernels flag out-of-range ids; reading the flag is a device-to-host copy). While a
// DeferDeviceChecks scope lives on a thread, such a check is queued instead of read, and
// run_deferred_device_checks() reads the whole queue's failure count in one copy and reports the
// first failed check with the error it would have thrown at once. The trainer defers its
// updates' checks to the next train record (train/device_window.h); everything else checks at
// once.
#pragma once

#include <functional>

#include "core/tensor.h"

namespace relpos {

class DeferDeviceChecks {
 public:
  DeferDeviceChecks();
  ~DeferDeviceChecks();
  DeferDeviceChecks(const DeferDeviceChecks&) = delete;
  DeferDeviceChecks& operator=(const DeferDeviceChecks&) = delete;
};

// Whether a DeferDeviceChecks scope lives on this thread.
bool device_checks_deferred();

// Queues a check: `failures` is a device tensor whose first element counts what failed (it is
// not read now); `report` reads it again and throws the check's error when it failed. A queue
// past 1,024 checks, or a check on another device than the queue's, runs the queue first.
void defer_device_check(const Tensor& failures, std::function<void()> report);

// Runs this thread's queued checks in their order (one read when none failed) and empties the
// queue; the first failed check throws its error.
void run_deferred_device_checks();

}  // namespace relpos
