// CPU allocator: 64-byte aligned buffers, counted in the process-wide CPU MemoryCounter.
#include <cstdlib>
#include <new>

#include "core/backend.h"

namespace relpos::cpu {

namespace {
constexpr size_t kAlignment = 64;
}

MemoryCounter& memory_counter() {
  static MemoryCounter counter;
  return counter;
}

void* allocate(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
  const size_t rounded = (std::max<size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (ptr == nullptr) fail("cpu allocator", "out of memory allocating {} bytes", nbytes);
  memory_counter().on_allocate(nbytes);
  return ptr;
}

void deallocate(void* ptr, size_t nbytes) {
  std::free(ptr);
  memory_counter().on_free(nbytes);
}

}  // namespace relpos::cpu
