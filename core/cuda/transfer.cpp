// Host <-> device copies through a pinned staging buffer (page-locked, so the DMA engine reads
// it directly), in chunks; each call returns when the data has arrived.
#include <cstring>
#include <mutex>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/transfers.h"

namespace relpos::cuda {

namespace {

constexpr size_t kChunk = size_t{16} << 20;  // bytes per staged transfer

class PinnedBuffer {
 public:
  PinnedBuffer() { RELPOS_CUDA_CHECK("to", cudaMallocHost(&data_, kChunk)); }
  ~PinnedBuffer() { cudaFreeHost(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  char* data() const { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
};

// One staging buffer, used under a lock (transfers are synchronous anyway).
std::mutex& staging_mutex() {
  static std::mutex m;
  return m;
}
PinnedBuffer& staging() {
  static PinnedBuffer buffer;
  return buffer;
}

size_t byte_count(const Tensor& t) {
  return static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
}

}  // namespace

void copy_to_host(const Tensor& src, const Tensor& dst) {
  count_device_to_host_copy();
  const size_t n = byte_count(src);
  DeviceGuard guard(src.device());
  cudaStream_t stream = stream_of(src.device());
  std::lock_guard<std::mutex> lock(staging_mutex());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  for (size_t done = 0; done < n; done += kChunk) {
    const size_t len = std::min(kChunk, n - done);
    RELPOS_CUDA_CHECK(
        "to", cudaMemcpyAsync(staging().data(), from + done, len, cudaMemcpyDeviceToHost, stream));
    RELPOS_CUDA_CHECK("to", cudaStreamSynchronize(stream));
    std::memcpy(to + done, staging().data(), len);
  }
}

void copy_from_host(const Tensor& src, const Tensor& dst) {
  const size_t n = byte_count(src);
  DeviceGuard guard(dst.device());
  cudaStream_t stream = stream_of(dst.device());
  std::lock_guard<std::mutex> lock(staging_mutex());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  for (size_t done = 0; done < n; done += kChunk) {
    const size_t len = std::min(kChunk, n - done);
    std::memcpy(staging().data(), from + done, len);
    RELPOS_CUDA_CHECK(
        "to", cudaMemcpyAsync(to + done, staging().data(), len, cudaMemcpyHostToDevice, stream));
    RELPOS_CUDA_CHECK("to", cudaStreamSynchronize(stream));
  }
}

}  // namespace relpos::cuda
