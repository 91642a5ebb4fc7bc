// device_to_host_copies and host_reads (transfers.h).
#include "core/transfers.h"

#include <atomic>

namespace relpos {

namespace {
std::atomic<int64_t> g_device_to_host{0};
std::atomic<int64_t> g_host_reads{0};
}  // namespace

int64_t device_to_host_copies() {
  return g_device_to_host.load(std::memory_order_relaxed);
}

void count_device_to_host_copy() {
  g_device_to_host.fetch_add(1, std::memory_order_relaxed);
}

int64_t host_reads() {
  return g_host_reads.load(std::memory_order_relaxed);
}

void count_host_read() {
  g_host_reads.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace relpos
