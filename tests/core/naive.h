// Plain-loop helpers for the op tests' naive references: broadcasting by index arithmetic, so a
// reference never goes through the expand/strided machinery of the ops it checks.
#pragma once

#include <vector>

#include "core/tensor.h"

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

}  // namespace relpos::test
