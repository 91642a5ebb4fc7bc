// Overlapping image patches by one index_select (layers/image_patches.h).
#include "layers/image_patches.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/ops.h"

namespace relpos {

int64_t square_side(int64_t pixels) {
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(pixels))));
  return side > 0 && side * side == pixels ? side : 0;
}

Tensor image_patches(const Tensor& values, const PatchGeometry& g) {
  const int64_t n = g.side, k = g.size, s = g.stride, m = g.grid(), p = g.pad();
  RELPOS_CHECK(n > 0 && s > 0 && k >= s && n % s == 0, "image_patches",
               "a {} x {} image takes patches of size {} >= stride {}, a divisor of {}", n, n, k, s,
               n);
  RELPOS_CHECK(values.dim() == 2 && values.size(1) == n * n, "image_patches",
               "expects values [B, {}] ({} x {} pixels), got {}", n * n, n, n, values.str());
  // Column n * n of the padded values is 0: the pixels outside the image point there.
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(m * m * k * k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t a = 0; a < k; ++a)
        for (int64_t b = 0; b < k; ++b) {
          const int64_t r = i * s - p + a, c = j * s - p + b;
          index.push_back(r >= 0 && r < n && c >= 0 && c < n ? r * n + c : n * n);
        }
  const Tensor padded = pad(values, {0, 1});  // [B, n * n + 1]
  const Tensor at =
      Tensor::from_vector(index, {static_cast<int64_t>(index.size())}).to(values.device());
  return index_select(padded, 1, at).reshape({values.size(0), m * m, k * k});
}

}  // namespace relpos
