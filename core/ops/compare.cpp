// Entry points of the broadcasting comparisons (u8 masks), where(cond, a, b) and masked_fill.
#include <cmath>
#include <limits>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

Tensor compare_op(CompareOp op, const char* name, const Tensor& a, const Tensor& b) {
  check_same_device(name, {&a, &b});
  check_same_dtype(name, {&a, &b});
  check_not_bf16(name, a);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor ae = a.expand(shape), be = b.expand(shape);
  Tensor out = Tensor::empty(shape, DType::u8, a.device());
  if (a.device().is_cpu())
    cpu::compare(op, ae, be, out);
  else
    cuda::compare(op, ae, be, out);
  return out;
}

void check_mask(const char* op, const Tensor& mask) {
  RELPOS_CHECK(mask.dtype() == DType::u8, op, "the condition/mask must be u8, got {}", mask.str());
}

// Whether `value` converts exactly to an element of `dtype` (any finite or infinite value for the
// floating dtypes, an in-range integer otherwise).
bool holds_value(DType dtype, double value) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>)
      return true;
    else
      return std::nearbyint(value) == value &&
             value >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
             value < static_cast<double>(std::numeric_limits<T>::max()) + 1;
  });
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::eq, "eq", a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::ne, "ne", a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::lt, "lt", a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::le, "le", a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::gt, "gt", a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::ge, "ge", a, b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device("where", {&cond, &a, &b});
  check_mask("where", cond);
  check_same_dtype("where", {&a, &b});
  check_not_bf16("where", a);
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  const Tensor ce = cond.expand(shape), ae = a.expand(shape), be = b.expand(shape);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (a.device().is_cpu())
    cpu::where(ce, ae, be, out);
  else
    cuda::where(ce, ae, be, out);
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_same_device("masked_fill", {&x, &mask});
  check_mask("masked_fill", mask);
  RELPOS_CHECK(broadcast_shapes(mask.shape(), x.shape(), "masked_fill") == x.shape(), "masked_fill",
               "mask {} does not broadcast to x {}", mask.str(), x.str());
  RELPOS_CHECK(holds_value(x.dtype(), value), "masked_fill", "value {} cannot be stored in {}",
               value, x.str());
  // The fill value as a 0-dim tensor, broadcast by where.
  return where(mask, Tensor::scalar(value, x.dtype(), x.device()), x);
}

}  // namespace relpos
