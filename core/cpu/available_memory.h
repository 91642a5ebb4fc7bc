// Where the CPU allocator reads how many more bytes the process can take. Linux overcommits: a
// buffer larger than the memory left is granted, and the OOM killer ends the process (signal 9,
// no message) once its pages are written, so the allocator refuses such a buffer by name instead
// (allocator.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "core/allocator.h"

namespace relpos::cpu {

// The reading the allocator uses, available_cpu_memory (core/allocator.h) unless replaced: a test
// replaces it to play out running out of memory. Returns the reader it replaces; the next
// allocation reads the new one. Not while other threads allocate.
using AvailableMemoryReader = std::optional<int64_t> (*)();
AvailableMemoryReader set_available_memory_reader(AvailableMemoryReader reader);

}  // namespace relpos::cpu
