// CPU kernel of the broadcasting binary ops (add, ..., the fused activation gradients): the
// functors fn::binary<Op, T> of core/functors.h mapped by map_elementwise over operands already
// expanded to the output's shape (broadcast dims have stride 0).
#include "core/backend.h"
#include "core/cpu/strided_loop.h"

namespace relpos::cpu {

void binary(BinaryOp op, double scalar, const Tensor& a, const Tensor& b, const Tensor& out) {
  // a, b: [...] expanded to out's shape; out: [...] contiguous; one dtype.
  visit_binary(op, [&](auto op_tag) {
    constexpr BinaryOp Op = decltype(op_tag)::value;
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T s = static_cast<T>(scalar);
      map_elementwise<T, T, T>(out, {&a, &b}, [s](T x, T y) { return fn::binary<Op, T>(x, y, s); });
    };
    if constexpr (binary_accepts_integers(Op))
      dispatch_dtype(a.dtype(), run);
    else
      dispatch_floating(a.dtype(), "binary", run);
  });
}

}  // namespace relpos::cpu
