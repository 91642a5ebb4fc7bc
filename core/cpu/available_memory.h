// Where the CPU allocator reads how many more bytes the process can take. Linux overcommits: a
// buffer larger than the memory left is granted, and the OOM killer ends the process (signal 9,
// no message) once its pages are written, so the allocator refuses such a buffer by name instead
// (allocator.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/allocator.h"

namespace relpos::cpu {

// The reading the allocator uses, available_cpu_memory (core/allocator.h) unless replaced: a test
// replaces it to play out running out of memory. Returns the reader it replaces; the next
// allocation reads the new one. Not while other threads allocate.
using AvailableMemoryReader = std::optional<int64_t> (*)();
AvailableMemoryReader set_available_memory_reader(AvailableMemoryReader reader);

// Refuses, as the allocator refuses a buffer (OutOfMemory, "[cpu allocator] ..."), `bytes` more
// that the memory left cannot hold, before a caller allocates them in many small buffers (a
// model's layers) that would each pass until the machine's memory is spent. `what` names them.
void check_memory_for(int64_t bytes, const std::string& what);

}  // namespace relpos::cpu
