// Reduction kernels walk their input in memory order: x's dims permuted by decreasing stride and
// made contiguous (no copy for a transposed or permuted dense tensor, else a sequential one).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/backend.h"

namespace relpos::cpu {

// Calls f(xm, dm, om) where xm is x permuted into memory order (contiguous), dm are `dims` in
// xm's numbering (sorted), and om the output in that order: `out` itself when the order is x's
// own, else a temporary copied back into `out` (keepdim shape, x's rank) afterwards.
template <typename F>
void in_memory_order(const Tensor& x, const std::vector<int>& dims, const Tensor& out, F&& f) {
  std::vector<int64_t> perm(x.dim());
  std::iota(perm.begin(), perm.end(), 0);
  if (!x.is_contiguous())
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
  bool identity = true;
  for (int d = 0; d < x.dim(); ++d) identity = identity && perm[d] == d;
  if (identity) {
    f(x.contiguous(), dims, out);
    return;
  }
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  std::vector<int> dm;
  for (int d : dims) dm.push_back(static_cast<int>(inv[d]));
  std::sort(dm.begin(), dm.end());
  const Tensor om = Tensor::empty(out.permute(perm).shape(), out.dtype(), out.device());
  f(x.permute(perm).contiguous(), dm, om);
  copy(om.permute(inv), out);
}

}  // namespace relpos::cpu
