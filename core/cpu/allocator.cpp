// CPU allocator: 64-byte aligned buffers, counted in the process-wide CPU MemoryCounter. Large
// buffers are 2 MiB aligned and marked for transparent huge pages: the first write of a fresh
// 64 MiB output then faults 32 pages instead of 16384 (measured 41-55 ms -> 8 ms in a VM).
// A training step frees and reallocates the same activation sizes every step; glibc's default
// gives freed top-of-heap memory back to the kernel and maps buffers from 128 KiB on their own,
// so every step faulted its pages in again (8.5% of the demo step). Buffers up to 32 MiB stay in
// the heap, and up to 512 MiB of free memory is kept for reuse (demo step 20.3 -> 18.1 ms).
#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

namespace {
bool keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);   // glibc's maximum; fixed, so its dynamic threshold is off
  mallopt(M_TRIM_THRESHOLD, 512 << 20);  // free heap memory kept before trimming
#endif
  return true;
}
}  // namespace

void* allocate(size_t nbytes) {
  static const bool tuned = keep_freed_memory();
  (void)tuned;
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
