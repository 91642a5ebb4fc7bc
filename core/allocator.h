// Byte-counting allocators. Every tensor buffer comes from here, so current and peak bytes are
// exact per device (the peak-memory column of the paper's Table 3 and the O(N) memory tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

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
