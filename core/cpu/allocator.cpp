// CPU allocator: 64-byte aligned buffers, counted in the process-wide CPU MemoryCounter. Large
// buffers are 2 MiB aligned and marked for transparent huge pages: the first write of a fresh
// 64 MiB output then faults 32 pages instead of 16384 (measured 41-55 ms -> 8 ms in a VM).
// A training step frees and reallocates the same buffer sizes every step, and memory the kernel
// gets back must be faulted in and zeroed again on its next use. So freed memory is kept: glibc
// keeps buffers up to 32 MiB (its largest mmap threshold) in its heap and up to 512 MiB of free
// heap untrimmed (demo step 20.3 -> 18.1 ms: its page faults were 8.5% of the step), and buffers
// from 32 MiB are cached here by size, up to kCacheLimit bytes, and reused on an exact size match
// (the Table-2 step spent 9.7% of its time zeroing fresh pages of such buffers).
// A buffer the system has no memory left for is refused here, by name (available_memory.h).
#include <sys/mman.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>

#include "core/backend.h"
#include "core/cpu/available_memory.h"

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

// Live tensor bytes up to which the last reading of the memory left needs no new one, and that
// reading's source.
std::atomic<int64_t> allowed_live_bytes{0};
std::atomic<AvailableMemoryReader> memory_reader{&available_cpu_memory};
std::atomic<int64_t> highest_read_live{0};
std::atomic<int64_t> allocations_since_reading{0};
constexpr int64_t kReadEvery = 4096;
// Memory left for the rest of the process: the heap beside the tensors, the kernel's page tables.
constexpr int64_t kReserve = int64_t{16} << 20;

// The last reading, and how many bytes of memory the process took per tensor byte between the
// two before it: model objects, autograd nodes and glibc's free heap grow beside the tensors (a
// model of many small layers takes twice its tensors' bytes, the forward of one up to six
// times). Until a rate is seen, 4 is assumed.
struct Reading {
  bool taken = false;
  int64_t live = 0, left = 0;
  double bytes_per_tensor_byte = 4;
};
Reading last;  // guarded by check_available_memory's mutex

// The memory the system has left; read again after the freed memory this process keeps (the block
// cache, glibc's free heap) goes back to the system when it is short of `size` bytes.
std::optional<int64_t> memory_left_for(int64_t size) {
  std::optional<int64_t> left = memory_reader.load()();
  if (left && *left - kReserve < size) {
    empty_cache();
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
    left = memory_reader.load()();
  }
  return left;
}

// Refuses a new buffer of `rounded` bytes that the memory the system has left, less kReserve,
// cannot hold. The memory left is read again once the tensors could have taken half of it at the
// rate last seen, so each reading comes closer to the end than the one before, and an
// allocation in between compares two numbers. Before refusing, the freed memory this process
// keeps (the block cache, glibc's free heap) goes back to the system.
void check_available_memory(size_t nbytes, size_t rounded) {
  static std::mutex mutex;
  const int64_t live = memory_counter().stats().current_bytes;
  const int64_t size = static_cast<int64_t>(rounded);
  // Past the most the tensors held at a reading, every kReadEvery allocations read again too:
  // the memory beside the tensors grows with the number of objects, not with their bytes.
  const bool growing = live > highest_read_live.load() && ++allocations_since_reading >= kReadEvery;
  if (!growing && allowed_live_bytes.load() - live >= size) return;
  std::lock_guard<std::mutex> lock(mutex);
  allocations_since_reading = 0;
  const std::optional<int64_t> left = memory_left_for(size);
  if (!left) {  // nothing to go by: no more readings
    allowed_live_bytes = highest_read_live = std::numeric_limits<int64_t>::max();
    return;
  }
  if (*left - kReserve < size)
    fail<OutOfMemory>(
        "cpu allocator",
        "out of memory allocating {} bytes: the system has {} bytes left ({} held by tensors, "
        "{} kept for the rest of the process)",
        nbytes, *left, live, kReserve);
  if (const int64_t grown = live - last.live; last.taken && grown >= (int64_t{1} << 20))
    last.bytes_per_tensor_byte =
        std::clamp(static_cast<double>(last.left - *left) / static_cast<double>(grown), 1.0, 16.0);
  last.taken = true;
  last.live = live;
  highest_read_live = std::max(highest_read_live.load(), live);
  last.left = *left;
  const auto window =
      static_cast<int64_t>(static_cast<double>(*left - kReserve) / 2 / last.bytes_per_tensor_byte);
  allowed_live_bytes = live + std::max(size, window);
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
  check_available_memory(nbytes, rounded);
  void* ptr = std::aligned_alloc(align, rounded);
  if (ptr == nullptr)
    fail<OutOfMemory>("cpu allocator", "out of memory allocating {} bytes ({} held by tensors)",
                      nbytes, memory_counter().stats().current_bytes);
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

void check_memory_for(int64_t bytes, const std::string& what) {
  const std::optional<int64_t> left = memory_left_for(bytes);
  if (left && *left - kReserve < bytes)
    fail<OutOfMemory>("cpu allocator",
                      "{} take {} bytes: the system has {} bytes left ({} held by tensors, {} kept "
                      "for the rest of the process)",
                      what, bytes, *left, memory_counter().stats().current_bytes, kReserve);
}

AvailableMemoryReader set_available_memory_reader(AvailableMemoryReader reader) {
  const AvailableMemoryReader previous = memory_reader.exchange(reader);
  allowed_live_bytes = highest_read_live = 0;
  last = Reading{};
  return previous;
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
