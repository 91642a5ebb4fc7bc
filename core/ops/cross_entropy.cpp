// Entry points: cross_entropy (fused with log_softmax, with ignore_index and a reduction) and its
// gradient. The kernels work per row; the reductions are composed here from sum and mul_scalar.
#include <vector>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

// logits: [N, C] floating; target: [N] i32/i64 on the same device.
void check_args(const char* op, const Tensor& logits, const Tensor& target) {
  check_floating(op, logits);
  check_defined(op, target, "target");
  check_same_device(op, {&logits, &target});
  RELPOS_CHECK(logits.dim() == 2, op, "logits must be [N, C], got {}", logits.str());
  RELPOS_CHECK(target.dtype() == DType::i32 || target.dtype() == DType::i64, op,
               "target must be i32 or i64, got {}", target.str());
  RELPOS_CHECK(target.shape() == Shape{logits.size(0)}, op,
               "target must be [{}] for logits {}, got {}", logits.size(0), logits.str(),
               target.str());
}

// max(1, number of rows whose target is not ignore_index) as a 0-dim tensor of `dtype` on the
// target's device: the mean's divisor, computed without a host round trip. With no kept row every
// loss and gradient is 0 already, so the 1 leaves them 0.
Tensor kept_rows(const Tensor& target, int64_t ignore_index, DType dtype) {
  const Tensor ignore =
      full({}, static_cast<double>(ignore_index), target.dtype(), target.device());
  const Tensor kept = sum(cast(ne(target, ignore), dtype));
  return maximum(kept, ones({}, dtype, target.device()));
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     Reduction reduction) {
  check_args("cross_entropy", logits, target);
  const int64_t N = logits.size(0);
  Tensor losses = Tensor::empty({N}, logits.dtype(), logits.device());  // [N], 0 where ignored
  if (N > 0) {
    const Tensor lc = logits.contiguous();  // [N, C]
    if (logits.device().is_cpu())
      cpu::cross_entropy(lc, target, ignore_index, losses);
    else
      cuda::cross_entropy(lc, target, ignore_index, losses);
  }
  if (reduction == Reduction::none) return losses;
  if (N == 0) return zeros({}, logits.dtype(), logits.device());
  const Tensor total = sum(losses);  // []
  if (reduction == Reduction::sum) return total;
  return div(total, kept_rows(target, ignore_index, logits.dtype()));
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& grad,
                              int64_t ignore_index, Reduction reduction) {
  const char* op = "cross_entropy_backward";
  check_args(op, logits, target);
  check_same_device(op, {&logits, &grad});
  check_same_dtype(op, {&logits, &grad});
  const int64_t N = logits.size(0);
  const Shape grad_shape = reduction == Reduction::none ? Shape{N} : Shape{};
  RELPOS_CHECK(grad.shape() == grad_shape, op, "grad must be {} for this reduction, got {}",
               shape_str(grad_shape), grad.str());
  Tensor dlogits = Tensor::empty(logits.shape(), logits.dtype(), logits.device());  // [N, C]
  if (dlogits.numel() == 0) return dlogits;
  // Per-row loss gradient: [N] (ignored rows are zeroed by the kernel whatever it holds).
  Tensor row_grad = grad;
  if (reduction == Reduction::sum) {
    row_grad = grad.expand({N});
  } else if (reduction == Reduction::mean) {
    row_grad = div(grad, kept_rows(target, ignore_index, logits.dtype())).expand({N});
  }
  const Tensor lc = logits.contiguous();
  if (logits.device().is_cpu())
    cpu::cross_entropy_backward(lc, target, ignore_index, row_grad, dlogits);
  else
    cuda::cross_entropy_backward(lc, target, ignore_index, row_grad, dlogits);
  return dlogits;
}

}  // namespace relpos
