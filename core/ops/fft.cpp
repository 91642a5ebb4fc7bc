// Entry points: rfft and irfft along the last dim. Complex values are a trailing dim of 2; the
// backends see contiguous [R, n] real rows and [R, n/2+1, 2] spectra.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

Shape with_tail(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

// The first `keep` entries of x along dim `dim` (negative), contiguous, zero-filled past
// x.size(dim) when keep is larger.
Tensor fit_length(const Tensor& x, int64_t dim, int64_t keep) {
  if (keep <= x.size(dim)) return x.slice(dim, 0, keep).contiguous();
  Shape shape = x.shape();
  shape[x.dim() + dim] = keep;
  Tensor padded = zeros(shape, x.dtype(), x.device());
  copy_(padded.slice(dim, 0, x.size(dim)), x);
  return padded;
}

}  // namespace

Tensor rfft(const Tensor& x, int64_t n) {
  check_floating("rfft", x);
  RELPOS_CHECK(x.dim() >= 1, "rfft", "expects a tensor with at least 1 dim, got {}", x.str());
  if (n == -1) n = x.size(-1);
  RELPOS_CHECK(n >= 1, "rfft", "transform length n must be positive, got {} for {}", n, x.str());
  const Shape batch(x.shape().begin(), x.shape().end() - 1);
  const int64_t rows = shape_numel(batch), h = n / 2 + 1;
  const Tensor x2 = fit_length(x, -1, n).view({rows, n});  // x2: [R, n]
  Tensor out = Tensor::empty(with_tail(batch, {h, 2}), x.dtype(), x.device());
  const Tensor out3 = out.view({rows, h, 2});
  if (x.device().is_cpu())
    cpu::rfft(x2, n, out3);
  else
    cuda::rfft(x2, n, out3);
  return out;
}

Tensor irfft(const Tensor& X, int64_t n) {
  check_floating("irfft", X);
  RELPOS_CHECK(X.dim() >= 2 && X.size(-1) == 2, "irfft",
               "expects a complex tensor [..., M, 2], got {}", X.str());
  const int64_t m = X.size(-2);
  if (n == -1) n = 2 * (m - 1);
  RELPOS_CHECK(n >= 1, "irfft", "output length n must be positive, got {} for {} (pass n)", n,
               X.str());
  const Shape batch(X.shape().begin(), X.shape().end() - 2);
  const int64_t rows = shape_numel(batch), h = n / 2 + 1;
  const Tensor X3 = fit_length(X, -2, h).view({rows, h, 2});  // X3: [R, h, 2]
  Tensor out = Tensor::empty(with_tail(batch, {n}), X.dtype(), X.device());
  const Tensor out2 = out.view({rows, n});
  if (X.device().is_cpu())
    cpu::irfft(X3, n, out2);
  else
    cuda::irfft(X3, n, out2);
  return out;
}

}  // namespace relpos
