// CPU cumsum along one dim of a strided tensor: the positions off the scan dim are walked by the
// strided-loop engine, and each run of positions is scanned in the order that reads memory
// sequentially. Sums accumulate in double for floats (f32 too) and in int64 for integers.
#include <algorithm>
#include <type_traits>

#include "core/backend.h"
#include "core/cpu/strided_loop.h"

namespace relpos::cpu {

namespace {

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Scans `count` positions, position p of x starting at x + p * step_x (and of out at
// out + p * step_o); along the scan, element j is j * scan_x (scan_o) further on.
template <typename T>
void scan_run(const T* x, T* out, int64_t count, int64_t step_x, int64_t step_o, int64_t len,
              int64_t scan_x, int64_t scan_o, bool reverse) {
  using Acc = Accumulator<T>;
  const int64_t j0 = reverse ? len - 1 : 0, dj = reverse ? -1 : 1;
  if (step_x == 1 && count > 1) {
    // Positions adjacent in memory: sweep the scan dim outermost over a tile of positions.
    constexpr int64_t kTile = 512;
    for (int64_t p0 = 0; p0 < count; p0 += kTile) {
      const int64_t tile = std::min(kTile, count - p0);
      Acc acc[kTile] = {};  // acc: [tile], the running sums
      for (int64_t j = j0, t = 0; t < len; j += dj, ++t) {
        const T* xj = x + j * scan_x + p0;
        T* oj = out + j * scan_o + p0 * step_o;
        for (int64_t p = 0; p < tile; ++p) {
          acc[p] += static_cast<Acc>(xj[p]);
          oj[p * step_o] = static_cast<T>(acc[p]);
        }
      }
    }
    return;
  }
  for (int64_t p = 0; p < count; ++p) {  // one position at a time, scanning along the dim
    const T* xp = x + p * step_x;
    T* op = out + p * step_o;
    Acc acc = 0;
    for (int64_t j = j0, t = 0; t < len; j += dj, ++t) {
      acc += static_cast<Acc>(xp[j * scan_x]);
      op[j * scan_o] = static_cast<T>(acc);
    }
  }
}

}  // namespace

void cumsum(const Tensor& x, int dim, bool reverse, const Tensor& out) {
  // x: any strides, out: contiguous, both of x's shape; scanned along `dim`.
  const int64_t len = x.size(dim);
  if (x.numel() == 0) return;
  // The positions: x and out with the scan dim removed (their element 0 along it).
  const Tensor x0 = x.select(dim, 0), out0 = out.select(dim, 0);
  const StridedLayout<2> layout = make_layout<2>(out0.shape(), {&out0, &x0});
  const int64_t scan_x = x.stride(dim), scan_o = out.stride(dim);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_run<2>(
        layout,
        [&](const std::array<char*, 2>& p, int64_t count, const std::array<int64_t, 2>& steps) {
          scan_run<T>(reinterpret_cast<const T*>(p[1]), reinterpret_cast<T*>(p[0]), count, steps[1],
                      steps[0], len, scan_x, scan_o, reverse);
        },
        /*cost_per_element=*/len);  // each position is a whole scan of len elements
  });
}

}  // namespace relpos::cpu
