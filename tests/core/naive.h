// Plain-loop helpers for the op tests' naive references: broadcasting by index arithmetic, so a
// reference never goes through the expand/strided machinery of the ops it checks.
#pragma once

#include <vector>

#include "core/ops.h"
#include "core/tensor.h"
#include "tests/harness.h"

namespace relpos::test {

// The values of x broadcast to `shape` (NumPy rules), in row-major order.
inline std::vector<double> broadcast_values(const Tensor& x, const Shape& shape) {
  const std::vector<double> v = x.to_vector<double>();
  const int nd = static_cast<int>(shape.size()), lead = nd - x.dim();
  std::vector<double> out(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), src = 0, stride = 1;
    for (int d = nd - 1; d >= lead; --d) {
      const int64_t idx = rem % shape[d], size = x.size(d - lead);
      rem /= shape[d];
      src += (size == 1 ? 0 : idx) * stride;
      stride *= size;
    }
    out[i] = v[static_cast<size_t>(src)];
  }
  return out;
}

// Row-major coordinates of a linear index, and back.
inline std::vector<int64_t> coords_of(int64_t linear, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = linear % shape[d];
    linear /= shape[d];
  }
  return c;
}
inline int64_t linear_of(const std::vector<int64_t>& c, const Shape& shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d) linear = linear * shape[d] + c[d];
  return linear;
}

// Random data of any dtype: integers in [-50, 50) for integer dtypes.
inline Tensor make_data(const Shape& shape, DType dtype, uint64_t seed) {
  if (is_floating(dtype)) return random_tensor(shape, dtype, seed);
  return cast(random_tensor(shape, DType::f64, seed, -50, 50), dtype);
}

}  // namespace relpos::test
