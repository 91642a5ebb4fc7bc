// Entry points: zeros, ones, full, arange, rand, randn.
#include <cmath>

#include "core/backend.h"
#include "core/ops.h"
#include "core/philox.h"

namespace relpos {

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor out = Tensor::empty(shape, dtype, device);
  fill_(out, value);
  return out;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}
Tensor zeros_like(const Tensor& x) {
  return full(x.shape(), 0, x.dtype(), x.device());
}
Tensor full_like(const Tensor& x, double value) {
  return full(x.shape(), value, x.dtype(), x.device());
}

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  RELPOS_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
               "arange", "invalid range start={} end={} step={}", start, end, step);
  const double count = std::ceil((end - start) / step);
  Tensor out = Tensor::empty({std::max<int64_t>(0, static_cast<int64_t>(count))}, dtype, device);
  if (device.is_cpu())
    cpu::arange(out, start, step);
  else
    cuda::arange(out, start, step);
  return out;
}

Tensor rand(const Shape& shape, Generator& gen, double low, double high, DType dtype,
            Device device) {
  RELPOS_CHECK(is_floating(dtype), "rand", "dtype must be f32 or f64, got {}", dtype_name(dtype));
  RELPOS_CHECK(low < high, "rand", "low ({}) must be below high ({})", low, high);
  Tensor out = Tensor::empty(shape, dtype, device);
  const uint64_t offset = gen.reserve(philox::blocks_for_uniform(out.numel()));
  if (device.is_cpu())
    cpu::random_uniform(out, gen.seed(), offset, low, high);
  else
    cuda::random_uniform(out, gen.seed(), offset, low, high);
  return out;
}

Tensor randn(const Shape& shape, Generator& gen, double mean, double std, DType dtype,
             Device device) {
  RELPOS_CHECK(is_floating(dtype), "randn", "dtype must be f32 or f64, got {}", dtype_name(dtype));
  RELPOS_CHECK(std >= 0, "randn", "std must be non-negative, got {}", std);
  Tensor out = Tensor::empty(shape, dtype, device);
  const uint64_t offset = gen.reserve(philox::blocks_for_normal(out.numel()));
  if (device.is_cpu())
    cpu::random_normal(out, gen.seed(), offset, mean, std);
  else
    cuda::random_normal(out, gen.seed(), offset, mean, std);
  return out;
}

}  // namespace relpos
