// Host <-> device copies through pinned (page-locked) staging buffers, in chunks. Device to
// host: one buffer, read after the stream is synchronized; the call returns with the data.
// Host to device: a ring of buffers per device, each reused only once the copy that last read it
// has finished (its event), so the call returns as soon as its bytes are staged and the copy
// waits in the stream's order: uploading a batch does not wait for the device's earlier work.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/transfers.h"

namespace relpos::cuda {

namespace {

constexpr size_t kChunk = size_t{4} << 20;  // bytes per staged transfer
constexpr size_t kRingSlots = 8;            // upload buffers per device

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

// The upload buffers of one device, used in turn (created with that device current).
class UploadRing {
 public:
  UploadRing() {
    for (Slot& slot : slots_)
      RELPOS_CUDA_CHECK("to", cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming));
  }
  ~UploadRing() {
    for (Slot& slot : slots_) cudaEventDestroy(slot.copied);
  }
  UploadRing(const UploadRing&) = delete;
  UploadRing& operator=(const UploadRing&) = delete;

  // Stages `len` bytes of `from` and queues their copy to `to` on `stream`.
  void upload(char* to, const char* from, size_t len, cudaStream_t stream) {
    Slot& slot = slots_[next_];
    next_ = (next_ + 1) % kRingSlots;
    if (slot.used) RELPOS_CUDA_CHECK("to", cudaEventSynchronize(slot.copied));
    std::memcpy(slot.buffer.data(), from, len);
    RELPOS_CUDA_CHECK("to",
                      cudaMemcpyAsync(to, slot.buffer.data(), len, cudaMemcpyHostToDevice, stream));
    RELPOS_CUDA_CHECK("to", cudaEventRecord(slot.copied, stream));
    slot.used = true;
  }

 private:
  struct Slot {
    PinnedBuffer buffer;
    cudaEvent_t copied = nullptr;  // recorded after the copy that last read the buffer
    bool used = false;
  };
  Slot slots_[kRingSlots];
  size_t next_ = 0;
};

// The buffers are used under one lock.
std::mutex& staging_mutex() {
  static std::mutex m;
  return m;
}
PinnedBuffer& download_buffer() {
  static PinnedBuffer buffer;
  return buffer;
}
UploadRing& upload_ring(int device) {
  static std::map<int, std::unique_ptr<UploadRing>> rings;
  std::unique_ptr<UploadRing>& ring = rings[device];
  if (ring == nullptr) ring = std::make_unique<UploadRing>();
  return *ring;
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
    RELPOS_CUDA_CHECK("to", cudaMemcpyAsync(download_buffer().data(), from + done, len,
                                            cudaMemcpyDeviceToHost, stream));
    RELPOS_CUDA_CHECK("to", cudaStreamSynchronize(stream));
    std::memcpy(to + done, download_buffer().data(), len);
  }
}

void copy_from_host(const Tensor& src, const Tensor& dst) {
  const size_t n = byte_count(src);
  DeviceGuard guard(dst.device());
  cudaStream_t stream = stream_of(dst.device());
  std::lock_guard<std::mutex> lock(staging_mutex());
  UploadRing& ring = upload_ring(dst.device().index);
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  for (size_t done = 0; done < n; done += kChunk)
    ring.upload(to + done, from + done, std::min(kChunk, n - done), stream);
}

}  // namespace relpos::cuda
