// CUDA rfft / irfft over the rows of a [R, n] buffer with cuFFT (R2C/C2R for f32, D2Z/Z2D for
// f64). Plans are cached per (device, dtype, direction, n, rows) and own no work area: each call
// lends them one allocated as a Tensor, so the counting allocator sees every byte.
#include <cufft.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/fft_kernels.h"

namespace relpos::cuda {

namespace {

enum class Direction { forward, inverse };

// One cuFFT plan for `rows` transforms of length n (rows of n reals, rows of n/2+1 complex
// values), destroyed with the object.
class Plan {
 public:
  Plan(const char* op, DType dtype, Direction dir, int64_t n, int64_t rows) {
    RELPOS_CUFFT_CHECK(op, cufftCreate(&handle_.value));
    handle_.created = true;
    RELPOS_CUFFT_CHECK(op, cufftSetAutoAllocation(handle_.value, 0));
    const bool f64 = dtype == DType::f64, fwd = dir == Direction::forward;
    const cufftType type = fwd ? (f64 ? CUFFT_D2Z : CUFFT_R2C) : (f64 ? CUFFT_Z2D : CUFFT_C2R);
    long long len = n;
    const long long real_dist = n, complex_dist = n / 2 + 1;
    RELPOS_CUFFT_CHECK(
        op,
        cufftMakePlanMany64(handle_.value, 1, &len, nullptr, 1, fwd ? real_dist : complex_dist,
                            nullptr, 1, fwd ? complex_dist : real_dist, type, rows, &work_bytes_));
  }

  cufftHandle handle() const { return handle_.value; }
  size_t work_bytes() const { return work_bytes_; }

 private:
  // Destroys the handle, also when the constructor throws after creating it.
  struct Handle {
    cufftHandle value = 0;
    bool created = false;
    Handle() = default;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
      if (created) cufftDestroy(value);  // errors ignored: may run at exit
    }
  };
  Handle handle_;
  size_t work_bytes_ = 0;
};

// Owns every plan; they are destroyed at program exit. The mutex also serializes the use of a
// plan: its stream and work area are set right before each launch.
class PlanCache {
 public:
  // Runs `exec(plan)` with the plan for the key, made on first use, its stream set to the
  // device's and its work area pointed at a fresh Tensor.
  template <typename F>
  void run(const char* op, Device device, DType dtype, Direction dir, int64_t n, int64_t rows,
           F&& exec) {
    const Key key{device.index, dtype, dir, n, rows};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      if (plans_.size() >= kMaxPlans) evict(op, device);
      it = plans_.emplace(key, std::make_unique<Plan>(op, dtype, dir, n, rows)).first;
    }
    const Plan& plan = *it->second;
    RELPOS_CUFFT_CHECK(op, cufftSetStream(plan.handle(), stream_of(device)));
    // work: [bytes] u8, released after the launch: the stream-ordered caching allocator hands the
    // block out again only to work queued after this transform on the same stream.
    Tensor work;
    if (plan.work_bytes() > 0) {
      work = Tensor::empty({static_cast<int64_t>(plan.work_bytes())}, DType::u8, device);
      RELPOS_CUFFT_CHECK(op, cufftSetWorkArea(plan.handle(), work.raw_data()));
    }
    exec(plan.handle());
  }

 private:
  // Plans hold device memory (twiddles), so the number of shapes kept is bounded: a full cache
  // drops the device's plans once its stream has finished with them.
  static constexpr size_t kMaxPlans = 256;
  void evict(const char* op, Device device) {
    RELPOS_CUDA_CHECK(op, cudaStreamSynchronize(stream_of(device)));
    std::erase_if(plans_,
                  [&](const auto& entry) { return std::get<0>(entry.first) == device.index; });
  }

  using Key = std::tuple<int, DType, Direction, int64_t, int64_t>;  // device, dtype, dir, n, rows
  std::mutex mutex_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

// cuFFT requires complex-aligned data pointers: an input view starting at an odd element (a
// slice) is copied to a fresh, aligned buffer.
Tensor complex_aligned(const Tensor& x) {
  const auto address = reinterpret_cast<uintptr_t>(x.raw_data());
  return address % (2 * dtype_size(x.dtype())) == 0 ? x : x.clone();
}

}  // namespace

void rfft(const Tensor& x, int64_t n, const Tensor& out) {
  // x: [R, n] contiguous, out: [R, n/2+1, 2] contiguous
  const int64_t rows = x.size(0);
  if (rows == 0) return;
  DeviceGuard guard(out.device());
  if (n == 1) {  // a length-1 transform is the identity: X_0 = (x_0, 0)
    fill(out, 0);
    copy(x, out.select(2, 0));
    return;
  }
  const Tensor in = complex_aligned(x);  // in: [R, n]
  plan_cache().run(
      "rfft", out.device(), x.dtype(), Direction::forward, n, rows, [&](cufftHandle plan) {
        if (x.dtype() == DType::f64)
          RELPOS_CUFFT_CHECK(
              "rfft", cufftExecD2Z(plan, in.data<double>(),
                                   reinterpret_cast<cufftDoubleComplex*>(out.data<double>())));
        else
          RELPOS_CUFFT_CHECK("rfft",
                             cufftExecR2C(plan, in.data<float>(),
                                          reinterpret_cast<cufftComplex*>(out.data<float>())));
      });
}

void irfft(const Tensor& X, int64_t n, const Tensor& out) {
  // X: [R, n/2+1, 2] contiguous, out: [R, n] contiguous
  const int64_t rows = X.size(0);
  if (rows == 0) return;
  DeviceGuard guard(out.device());
  if (n == 1) {  // one bin: x_0 = Re(X_0)
    copy(X.select(2, 0), out);
    return;
  }
  const cudaStream_t stream = stream_of(out.device());
  // C2R overwrites its input, so it runs on a scaled, cleaned copy. spec: [R, h, 2]
  const Tensor spec = Tensor::empty(X.shape(), X.dtype(), X.device());
  RELPOS_CUDA_CHECK(
      "irfft", launch_irfft_prepare(X.dtype(), X.raw_data(), spec.raw_data(), rows, n, stream));
  plan_cache().run(
      "irfft", out.device(), X.dtype(), Direction::inverse, n, rows, [&](cufftHandle plan) {
        if (X.dtype() == DType::f64)
          RELPOS_CUFFT_CHECK(
              "irfft",
              cufftExecZ2D(plan, reinterpret_cast<cufftDoubleComplex*>(spec.data<double>()),
                           out.data<double>()));
        else
          RELPOS_CUFFT_CHECK("irfft",
                             cufftExecC2R(plan, reinterpret_cast<cufftComplex*>(spec.data<float>()),
                                          out.data<float>()));
      });
}

}  // namespace relpos::cuda
