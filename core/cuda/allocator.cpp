// The CUDA caching allocator. Freed blocks go to a per-device cache keyed by rounded size and are
// handed out again without cudaMalloc; since every op of a device runs on its one stream, a
// block freed by the host can be reused by the next op in stream order. The MemoryCounter counts
// the bytes tensors asked for (exact, like the CPU's); cached bytes are reported separately.
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"

namespace relpos::cuda {

namespace {

constexpr size_t kSmall = size_t{1} << 20;  // below: 512-byte granules; above: 2 MiB granules

size_t round_size(size_t nbytes) {
  const size_t granule = nbytes < kSmall ? 512 : (size_t{2} << 20);
  return (std::max<size_t>(nbytes, 1) + granule - 1) / granule * granule;
}

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}

  void* allocate(size_t nbytes) {
    const size_t size = round_size(nbytes);
    {
      std::lock_guard<std::mutex> guard(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* ptr = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
        counter_.on_allocate(nbytes);
        return ptr;
      }
    }
    DeviceGuard guard(Device::cuda(device_));
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, size);
    if (err == cudaErrorMemoryAllocation) {  // give the cache back to the driver and retry
      cudaGetLastError();
      release_cache();
      err = cudaMalloc(&ptr, size);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      const MemoryStats s = counter_.stats();
      fail<OutOfMemory>("cuda allocator",
                        "cannot allocate {} bytes on cuda:{}: {} ({} bytes in use by tensors)",
                        nbytes, device_, cudaGetErrorString(err), s.current_bytes);
    }
    counter_.on_allocate(nbytes);
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes) {
    const size_t size = round_size(nbytes);
    std::lock_guard<std::mutex> guard(mutex_);
    free_[size].push_back(ptr);
    cached_bytes_ += size;
    counter_.on_free(nbytes);
  }

  // Waits for the device, then frees every cached block.
  void release_cache() {
    DeviceGuard guard(Device::cuda(device_));
    cudaDeviceSynchronize();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) cudaFree(p);
    free_.clear();
    cached_bytes_ = 0;
  }

  MemoryCounter& counter() { return counter_; }
  size_t cached_bytes() {
    std::lock_guard<std::mutex> guard(mutex_);
    return cached_bytes_;
  }

 private:
  int device_;
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // rounded size -> cached blocks
  size_t cached_bytes_ = 0;
  MemoryCounter counter_;
};

std::vector<CachingAllocator*>& allocators() {
  // Never destroyed: tensors with static lifetime may still free blocks after main returns.
  static std::vector<CachingAllocator*>* all = [] {
    auto* v = new std::vector<CachingAllocator*>();
    for (int i = 0; i < device_count(); ++i) v->push_back(new CachingAllocator(i));
    // At exit, cached blocks go back to the driver, so leak checkers see only real leaks.
    std::atexit([] {
      for (CachingAllocator* a : allocators()) a->release_cache();
    });
    return v;
  }();
  return *all;
}

CachingAllocator& allocator_for(Device device) {
  RELPOS_CHECK(device.is_cuda() && device.index >= 0 && device.index < device_count(),
               "cuda allocator", "no such device {} ({} CUDA device(s) visible)", device.str(),
               device_count());
  return *allocators()[device.index];
}

}  // namespace

MemoryCounter& memory_counter(Device device) {
  return allocator_for(device).counter();
}

void* allocate(size_t nbytes, Device device) {
  return allocator_for(device).allocate(nbytes);
}

void deallocate(void* ptr, size_t nbytes, Device device) {
  allocator_for(device).deallocate(ptr, nbytes);
}

size_t cached_bytes(Device device) {
  return allocator_for(device).cached_bytes();
}
void empty_cache(Device device) {
  allocator_for(device).release_cache();
}

}  // namespace relpos::cuda
