// Entry points: copy_ (also slice-assign into a view), fill_, cast, to_device.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {
// A destination with a stride-0 dim of size > 1 would be written twice per element.
void check_writable(const char* op, const Tensor& dst) {
  for (int d = 0; d < dst.dim(); ++d)
    RELPOS_CHECK(dst.size(d) <= 1 || dst.stride(d) != 0, op,
                 "destination {} is an expanded view (stride 0 in dim {}); clone it first",
                 dst.str(), d);
}
}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  check_same_device("copy_", {&dst, &src});
  check_writable("copy_", dst);
  const Tensor s = src.expand(broadcast_shapes(src.shape(), dst.shape(), "copy_"));
  RELPOS_CHECK(s.shape() == dst.shape(), "copy_", "source {} does not broadcast to destination {}",
               src.str(), dst.str());
  if (dst.device().is_cpu())
    cpu::copy(s, dst);
  else
    cuda::copy(s, dst);
}

void fill_(const Tensor& dst, double value) {
  check_defined("fill_", dst);
  check_writable("fill_", dst);
  if (dst.device().is_cpu())
    cpu::fill(dst, value);
  else
    cuda::fill(dst, value);
}

Tensor cast(const Tensor& x, DType dtype) {
  check_defined("cast", x);
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  copy_(out, x);
  return out;
}

Tensor to_device(const Tensor& x, Device device) {
  check_defined("to", x);
  if (x.device() == device) return x;
  RELPOS_CHECK(device.is_cpu() || device.index < cuda::device_count(), "to",
               "cannot move {} to {}: {} CUDA device(s) visible", x.str(), device.str(),
               cuda::device_count());
  const Tensor src = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  if (device.is_cpu()) {
    cuda::copy_to_host(src, out);
  } else if (x.device().is_cpu()) {
    cuda::copy_from_host(src, out);
  } else {  // between two GPUs: through the host
    Tensor host = Tensor::empty(x.shape(), x.dtype(), Device::cpu());
    cuda::copy_to_host(src, host);
    cuda::copy_from_host(host, out);
  }
  return out;
}

}  // namespace relpos
