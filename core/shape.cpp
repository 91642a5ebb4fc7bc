#include "core/shape.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace relpos {

std::optional<int64_t> checked_numel(const Shape& shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t s : shape)
    if (__builtin_mul_overflow(n, s, &n)) return std::nullopt;
  return n;
}

int64_t shape_numel(const Shape& shape) {
  const std::optional<int64_t> n = checked_numel(shape);
  if (!n) fail("shape", "{} has more elements than int64 counts", shape_str(shape));
  return *n;
}

void check_largest_size(const std::string& who, const std::string& key, int64_t value) {
  RELPOS_CHECK(value <= kLargestSize, who, "{} {} is larger than any machine holds (at most 2^40)",
               key, value);
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // Saturated: only a shape with a size 0 (no element to index) can get past int64 here.
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s))
      s = std::numeric_limits<int64_t>::max();
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int normalize_dim(int64_t dim, int ndim, const char* op) {
  const int64_t d = dim < 0 ? dim + ndim : dim;
  RELPOS_CHECK(d >= 0 && d < ndim, op, "dim {} is out of range for a tensor with {} dims", dim,
               ndim);
  return static_cast<int>(d);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    RELPOS_CHECK(da == db || da == 1 || db == 1, op, "shapes {} and {} do not broadcast",
                 shape_str(a), shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace relpos
