// Byte-counting allocators. Every tensor buffer comes from here, so current and peak bytes are
// exact per device (the peak-memory column of the paper's Table 3 and the O(N) memory tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "core/device.h"

namespace relpos {

struct MemoryStats {
  int64_t current_bytes = 0;    // bytes held by live buffers (as requested, not rounded)
  int64_t peak_bytes = 0;       // maximum of current_bytes since the last reset
  int64_t allocations = 0;      // number of allocate() calls since the last reset
  int64_t allocated_bytes = 0;  // bytes those calls requested
};

MemoryStats memory_stats(Device device);
// Sets peak to current and zeroes the allocation count and bytes.
void reset_peak_memory(Device device);

// Bytes the device's caching allocator holds in freed blocks (on the CPU, buffers from 32 MiB),
// and their release.
int64_t cached_bytes(Device device);
void empty_cache(Device device);

// Bytes this process can still take on the CPU before the system stops it: MemAvailable +
// SwapFree of /proc/meminfo, and under a cgroup memory limit (v2 memory.max, or v1
// memory.limit_in_bytes) at most the limit less the group's usage, the usage not counting the
// inactive file cache the kernel reclaims first. nullopt where /proc/meminfo cannot be read. The
// CPU allocator refuses a buffer that does not fit in it (core/cpu/available_memory.h).
std::optional<int64_t> available_cpu_memory();

// Raw buffers for Storage. CPU buffers are 64-byte aligned. Zero-byte requests return a valid,
// unique pointer and count nothing.
void* allocate_bytes(size_t nbytes, Device device);
void free_bytes(void* ptr, size_t nbytes, Device device);

// The counter shared by the allocators of one device.
class MemoryCounter {
 public:
  void on_allocate(size_t nbytes);
  void on_free(size_t nbytes);
  MemoryStats stats() const;
  void reset_peak();

 private:
  int64_t current_ = 0;
  int64_t peak_ = 0;
  int64_t allocations_ = 0;
  int64_t allocated_bytes_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace relpos
