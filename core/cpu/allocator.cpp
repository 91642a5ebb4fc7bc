// CPU allocator: 64-byte aligned buffers, counted in the process-wide CPU MemoryCounter. Large
// buffers are 2 MiB aligned and marked for transparent huge pages: the first write of a fresh
// 64 MiB output then faults 32 pages instead of 16384 (measured 41-55 ms -> 8 ms in a VM).
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

#include "core/backend.h"

namespace relpos::cpu {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeThreshold = size_t{4} << 20;  // buffers from 4 MiB use huge pages
}  // namespace

MemoryCounter& memory_counter() {
  static MemoryCounter counter;
  return counter;
}

void* allocate(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
  const size_t align = nbytes >= kHugeThreshold ? kHugePage : kAlignment;
  const size_t rounded = (std::max<size_t>(nbytes, 1) + align - 1) / align * align;
  void* ptr = std::aligned_alloc(align, rounded);
  if (ptr == nullptr) fail("cpu allocator", "out of memory allocating {} bytes", nbytes);
  if (align == kHugePage) madvise(ptr, rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
  memory_counter().on_allocate(nbytes);
  return ptr;
}

void deallocate(void* ptr, size_t nbytes) {
  std::free(ptr);
  memory_counter().on_free(nbytes);
}

}  // namespace relpos::cpu
