#include "core/allocator.h"

#include <algorithm>

#include "core/backend.h"

namespace relpos {

void MemoryCounter::on_allocate(size_t nbytes) {
  std::lock_guard<std::mutex> guard(mutex_);
  current_ += static_cast<int64_t>(nbytes);
  peak_ = std::max(peak_, current_);
  ++allocations_;
  allocated_bytes_ += static_cast<int64_t>(nbytes);
}

void MemoryCounter::on_free(size_t nbytes) {
  std::lock_guard<std::mutex> guard(mutex_);
  current_ -= static_cast<int64_t>(nbytes);
}

MemoryStats MemoryCounter::stats() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return {current_, peak_, allocations_, allocated_bytes_};
}

void MemoryCounter::reset_peak() {
  std::lock_guard<std::mutex> guard(mutex_);
  peak_ = current_;
  allocations_ = 0;
  allocated_bytes_ = 0;
}

MemoryStats memory_stats(Device device) {
  return device.is_cpu() ? cpu::memory_counter().stats() : cuda::memory_counter(device).stats();
}

void reset_peak_memory(Device device) {
  if (device.is_cpu())
    cpu::memory_counter().reset_peak();
  else
    cuda::memory_counter(device).reset_peak();
}

int64_t cached_bytes(Device device) {
  return static_cast<int64_t>(device.is_cpu() ? cpu::cached_bytes() : cuda::cached_bytes(device));
}

void empty_cache(Device device) {
  if (device.is_cpu())
    cpu::empty_cache();
  else
    cuda::empty_cache(device);
}

void* allocate_bytes(size_t nbytes, Device device) {
  return device.is_cpu() ? cpu::allocate(nbytes) : cuda::allocate(nbytes, device);
}

void free_bytes(void* ptr, size_t nbytes, Device device) {
  if (device.is_cpu())
    cpu::deallocate(ptr, nbytes);
  else
    cuda::deallocate(ptr, nbytes, device);
}

}  // namespace relpos
