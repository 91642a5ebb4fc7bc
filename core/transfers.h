// A count of device-to-host copies (a tensor moved to the CPU, a scalar or a flag read back by a
// CUDA kernel's caller): each one waits for the device, so a training step should make none
// between its log intervals. Read by the profiler and by tests.
#pragma once

#include <cstdint>

namespace relpos {

// Copies from a CUDA device to the host since the process started.
int64_t device_to_host_copies();
// Called by the CUDA backend at each such copy.
void count_device_to_host_copy();

// Values read by the host with Tensor::item() or Tensor::to_vector(), on any device, since the
// process started. On a GPU each is a device-to-host copy and a wait; on the CPU, where nothing
// is copied, the count shows the same waits, so a test on either can prove a step makes none.
int64_t host_reads();
void count_host_read();

}  // namespace relpos
