// Entry points: softmax, log_softmax and their backward from the forward output, along any dim
// of a floating tensor (a 0-dim tensor counts as one element along dim 0). A row that is all
// -inf, or holds NaN or +inf, gives NaN, as in torch.
#include <algorithm>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

Tensor softmax_forward(const char* op, const Tensor& x, int64_t dim, bool log) {
  check_floating(op, x);
  const int d = normalize_dim(dim, std::max(x.dim(), 1), op);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  if (x.device().is_cpu())
    cpu::softmax(x, d, log, out);
  else
    cuda::softmax(x, d, log, out);
  return out;
}

Tensor softmax_grad(const char* op, const Tensor& y, const Tensor& gy, int64_t dim, bool log) {
  check_floating(op, y);
  check_same_device(op, {&y, &gy});
  check_same_dtype(op, {&y, &gy});
  RELPOS_CHECK(y.shape() == gy.shape(), op, "output {} and its gradient {} differ in shape",
               y.str(), gy.str());
  const int d = normalize_dim(dim, std::max(y.dim(), 1), op);
  Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
  if (gx.numel() == 0) return gx;
  if (y.device().is_cpu())
    cpu::softmax_backward(y, gy, d, log, gx);
  else
    cuda::softmax_backward(y, gy, d, log, gx);
  return gx;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return softmax_forward("softmax", x, dim, false);
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_forward("log_softmax", x, dim, true);
}

Tensor softmax_backward(const Tensor& y, const Tensor& gy, int64_t dim) {
  return softmax_grad("softmax_backward", y, gy, dim, false);
}

Tensor log_softmax_backward(const Tensor& y, const Tensor& gy, int64_t dim) {
  return softmax_grad("log_softmax_backward", y, gy, dim, true);
}

}  // namespace relpos
