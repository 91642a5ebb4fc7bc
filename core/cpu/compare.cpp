// CPU kernels of the comparisons (u8 masks) and where(cond, a, b), over operands already
// expanded to the output's shape.
#include "core/backend.h"
#include "core/cpu/strided_loop.h"

namespace relpos::cpu {

void compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  // a, b: [...] one dtype, expanded to out's shape; out: [...] u8.
  visit_compare(op, [&](auto op_tag) {
    constexpr CompareOp Op = decltype(op_tag)::value;
    dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elementwise<uint8_t, T, T>(out, {&a, &b},
                                     [](T x, T y) { return fn::compare<Op, T>(x, y); });
    });
  });
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  // cond: [...] u8; a, b: [...] out's dtype; all expanded to out's shape.
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elementwise<T, uint8_t, T, T>(out, {&cond, &a, &b},
                                      [](uint8_t c, T x, T y) { return c != 0 ? x : y; });
  });
}

}  // namespace relpos::cpu
