// Entry point: cumsum, the inclusive prefix sum (or suffix sum, reverse) along one dim.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

Tensor cumsum(const Tensor& x, int64_t dim, bool reverse) {
  check_defined("cumsum", x);
  check_not_bf16("cumsum", x);
  RELPOS_CHECK(x.dtype() != DType::u8, "cumsum",
               "u8 sums would wrap at 256; cast {} to i32 or i64 first", x.str());
  // A 0-dim tensor scans over its single element, as in torch (dim 0 or -1).
  const int d = normalize_dim(dim, std::max(x.dim(), 1), "cumsum");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.dim() == 0) {
    copy_(out, x);
    return out;
  }
  if (x.device().is_cpu())
    cpu::cumsum(x, d, reverse, out);
  else
    cuda::cumsum(x, d, reverse, out);
  return out;
}

}  // namespace relpos
