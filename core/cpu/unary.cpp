// CPU kernel of the elementwise unary ops: the functors fn::unary<Op, T> (core/functors.h) mapped
// over any strided input by map_elementwise; dense inputs become one vectorizable loop.
#include <type_traits>

#include "core/backend.h"
#include "core/cpu/strided_loop.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

// fn::unary, except f32 exp: libm's expf is a call that blocks vectorization, so it is the
// branch-free polynomial of vec_math.h (within 2 ulp; 0 below -87.34, +inf above 88.376).
template <UnaryOp Op, typename T>
T cpu_unary(T x, T s) {
  if constexpr (Op == UnaryOp::exp && std::is_same_v<T, float>)
    return exp_f32(x);
  else
    return fn::unary<Op, T>(x, s);
}

}  // namespace

void unary(UnaryOp op, double scalar, const Tensor& x, const Tensor& out) {
  // x: [...] any strides, out: [...] contiguous, same dtype.
  visit_unary(op, [&](auto op_tag) {
    constexpr UnaryOp Op = decltype(op_tag)::value;
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T s = static_cast<T>(scalar);
      map_elementwise<T, T>(out, {&x}, [s](T v) { return cpu_unary<Op, T>(v, s); });
    };
    if constexpr (unary_accepts_integers(Op))
      dispatch_dtype(x.dtype(), run);
    else
      dispatch_floating(x.dtype(), "unary", run);
  });
}

}  // namespace relpos::cpu
