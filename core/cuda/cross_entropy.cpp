// CUDA backend: cross_entropy and its backward. The kernels flag out-of-range targets on the
// device; the flag is copied back after the launch (or when deferred checks run) and the error
// thrown here names the first bad row and its target, with the CPU kernel's message.
#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/cross_entropy_kernels.h"
#include "core/deferred_checks.h"
#include "core/ops.h"
#include "core/transfers.h"

namespace relpos::cuda {

namespace {

// The device word the kernels atomically min a bad row into; starts above any row index.
Tensor bad_row_flag(const char* op, Device device, cudaStream_t stream) {
  Tensor flag = Tensor::empty({1}, DType::i64, device);
  RELPOS_CUDA_CHECK(op, cudaMemsetAsync(flag.raw_data(), 0x7f, sizeof(int64_t), stream));
  return flag;
}

unsigned long long* flag_ptr(const Tensor& flag) {
  return static_cast<unsigned long long*>(flag.raw_data());
}

// Waits for the kernel and throws for the first out-of-range target, as the CPU kernel does.
void report_bad_row(const char* op, const Tensor& flag, const Tensor& target, int64_t C,
                    cudaStream_t stream) {
  unsigned long long bad = 0;
  count_device_to_host_copy();
  RELPOS_CUDA_CHECK(
      op, cudaMemcpyAsync(&bad, flag.raw_data(), sizeof(bad), cudaMemcpyDeviceToHost, stream));
  RELPOS_CUDA_CHECK(op, cudaStreamSynchronize(stream));
  if (bad >= static_cast<unsigned long long>(target.size(0))) return;
  const auto row = static_cast<int64_t>(bad);
  const int64_t value = target.slice(0, row, row + 1).to_vector<int64_t>()[0];
  fail(op, "target {} out of range [0, {}) at row {}", value, C, row);
}

// report_bad_row now, or, while checks are deferred (core/deferred_checks.h), when they run.
void check_bad_row(const char* op, const Tensor& flag, const Tensor& target, int64_t C,
                   cudaStream_t stream) {
  if (!device_checks_deferred()) return report_bad_row(op, flag, target, C, stream);
  // The flag holds the first bad row, or a value above every row: bad when below N.
  const Tensor rows =
      Tensor::scalar(static_cast<double>(target.size(0)), DType::i64, flag.device());
  defer_device_check(lt(flag, rows), [op, flag, target, C, stream] {
    report_bad_row(op, flag, target, C, stream);
  });
}

}  // namespace

void cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                   const Tensor& losses) {
  const char* op = "cross_entropy";
  DeviceGuard guard(losses.device());
  const cudaStream_t stream = stream_of(losses.device());
  const int64_t N = logits.size(0), C = logits.size(1);
  const Tensor lc = logits.contiguous();  // logits: [N, C]; target: [N], any stride
  const Tensor flag = bad_row_flag(op, losses.device(), stream);
  RELPOS_CUDA_CHECK(op, launch_cross_entropy(logits.dtype(), target.dtype(), lc.raw_data(),
                                             target.raw_data(), target.stride(0), ignore_index,
                                             losses.raw_data(), N, C, flag_ptr(flag), stream));
  check_bad_row(op, flag, target, C, stream);
}

void cross_entropy_backward(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                            const Tensor& row_grad, const Tensor& dlogits) {
  const char* op = "cross_entropy_backward";
  DeviceGuard guard(dlogits.device());
  const cudaStream_t stream = stream_of(dlogits.device());
  const int64_t N = logits.size(0), C = logits.size(1);
  const Tensor lc = logits.contiguous();  // logits, dlogits: [N, C]; target, row_grad: [N]
  const Tensor flag = bad_row_flag(op, dlogits.device(), stream);
  RELPOS_CUDA_CHECK(op, launch_cross_entropy_backward(
                            logits.dtype(), target.dtype(), lc.raw_data(), target.raw_data(),
                            target.stride(0), ignore_index, row_grad.raw_data(), row_grad.stride(0),
                            dlogits.raw_data(), N, C, flag_ptr(flag), stream));
  check_bad_row(op, flag, target, C, stream);
}

}  // namespace relpos::cuda
