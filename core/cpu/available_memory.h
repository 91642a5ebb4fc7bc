// How many more bytes this process can take before the system stops it. Linux overcommits: a
// buffer larger than the memory left is granted, and the OOM killer ends the process (signal 9,
// no message) once its pages are written. The CPU allocator asks this before it grows past what
// it last knew to be free, so such a buffer is refused by name instead.
#pragma once

#include <cstdint>
#include <optional>

namespace relpos::cpu {

// MemAvailable + SwapFree of /proc/meminfo; under a cgroup memory limit (v2 memory.max, or v1
// memory.limit_in_bytes) at most the limit less the group's usage, the usage not counting the
// inactive file cache the kernel reclaims first. nullopt where /proc/meminfo cannot be read.
std::optional<int64_t> available_memory_bytes();

// The reading the CPU allocator uses (allocator.cpp), available_memory_bytes unless replaced: a
// test replaces it to play out running out of memory. Returns the reader it replaces; the next
// allocation reads the new one.
using AvailableMemoryReader = std::optional<int64_t> (*)();
AvailableMemoryReader set_available_memory_reader(AvailableMemoryReader reader);

}  // namespace relpos::cpu
