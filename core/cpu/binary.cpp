// CPU kernel of the broadcasting binary ops (add, ..., the fused activation gradients): the
// functors fn::binary<Op, T> of core/functors.h mapped by map_elementwise over operands already
// expanded to the output's shape (broadcast dims have stride 0).
#include <type_traits>

#include "core/backend.h"
#include "core/cpu/strided_loop.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

// fn::binary, except f32 elu_grad, whose libm exp call is the polynomial of vec_math.h.
template <BinaryOp Op, typename T>
T cpu_binary(T a, T b, T s) {
  if constexpr (Op == BinaryOp::elu_grad && std::is_same_v<T, float>)
    return select_bits(positive_bits(a), b, b * s * exp_f32(a));
  else
    return fn::binary<Op, T>(a, b, s);
}

}  // namespace

void binary(BinaryOp op, double scalar, const Tensor& a, const Tensor& b, const Tensor& out) {
  // a, b: [...] expanded to out's shape; out: [...] contiguous; one dtype.
  visit_binary(op, [&](auto op_tag) {
    constexpr BinaryOp Op = decltype(op_tag)::value;
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T s = static_cast<T>(scalar);
      map_elementwise<T, T, T>(out, {&a, &b}, [s](T x, T y) { return cpu_binary<Op, T>(x, y, s); });
    };
    if constexpr (binary_accepts_integers(Op))
      dispatch_dtype(a.dtype(), run);
    else
      dispatch_floating(a.dtype(), "binary", run);
  });
}

}  // namespace relpos::cpu
