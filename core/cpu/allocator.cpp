// CPU allocator: 64-byte aligned buffers, counted in the process-wide CPU MemoryCounter. Large
// buffers are 2 MiB aligned and marked for transparent huge pages: the first write of a fresh
// 64 MiB output then faults 32 pages instead of 16384 (measured 41-55 ms -> 8 ms in a VM).
// A training step frees and reallocates the same buffer sizes every step, and memory the kernel
// gets back must be faulted in and zeroed again on its next use. So freed memory is kept: glibc
// keeps buffers up to 32 MiB (its largest mmap threshold) in its heap and up to 512 MiB of free
// heap untrimmed (demo step 20.3 -> 18.1 ms: its page faults were 8.5% of the step), and buffers
// from 32 MiB are cached here by size, up to kCacheLimit bytes, and reused on an exact size match
// (the Table-2 step spent 9.7% of its time zeroing fresh pages of such buffers).
#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

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

constexpr size_t kCacheFrom = size_t{32} << 20;  // buffers from here on are cached by size
constexpr size_t kCacheLimit = size_t{1} << 30;  // bytes the cache holds at most

// Freed buffers of kCacheFrom bytes or more, by rounded size. Never destroyed: tensors held by
// other static objects may still be freed into it at exit.
struct BlockCache {
  std::mutex mutex;
  std::multimap<size_t, void*> blocks;
  size_t bytes = 0;
};
BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;
  return *cache;
}

// The bytes aligned_alloc is asked for: a multiple of the alignment (and non-zero).
size_t alignment_of(size_t nbytes) {
  return nbytes >= kHugeThreshold ? kHugePage : kAlignment;
}
size_t rounded_size(size_t nbytes) {
  const size_t align = alignment_of(nbytes);
  return (std::max<size_t>(nbytes, 1) + align - 1) / align * align;
}

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
  const size_t align = alignment_of(nbytes), rounded = rounded_size(nbytes);
  if (rounded >= kCacheFrom) {
    BlockCache& cache = block_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.blocks.find(rounded); it != cache.blocks.end()) {
      void* ptr = it->second;
      cache.blocks.erase(it);
      cache.bytes -= rounded;
      memory_counter().on_allocate(nbytes);
      return ptr;
    }
  }
  void* ptr = std::aligned_alloc(align, rounded);
  if (ptr == nullptr) fail("cpu allocator", "out of memory allocating {} bytes", nbytes);
  if (align == kHugePage) madvise(ptr, rounded, MADV_HUGEPAGE);  // a hint: failure is harmless
  memory_counter().on_allocate(nbytes);
  return ptr;
}

void deallocate(void* ptr, size_t nbytes) {
  memory_counter().on_free(nbytes);
  const size_t rounded = rounded_size(nbytes);
  if (rounded < kCacheFrom) {
    std::free(ptr);
    return;
  }
  BlockCache& cache = block_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.blocks.emplace(rounded, ptr);
  cache.bytes += rounded;
  while (cache.bytes > kCacheLimit) {  // the largest blocks go back first
    auto largest = std::prev(cache.blocks.end());
    cache.bytes -= largest->first;
    std::free(largest->second);
    cache.blocks.erase(largest);
  }
}

size_t cached_bytes() {
  BlockCache& cache = block_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.bytes;
}

void empty_cache() {
  BlockCache& cache = block_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  for (const auto& [size, ptr] : cache.blocks) std::free(ptr);
  cache.blocks.clear();
  cache.bytes = 0;
}

}  // namespace relpos::cpu
