// CPU kernel of the elementwise unary ops: the functors fn::unary<Op, T> (core/functors.h) in one
// flat vectorized loop for contiguous inputs (bf16 ones in f32 chunks, core/cpu/bf16_chunks.h), and
// through map_elementwise for strided ones.
#include <algorithm>
#include <type_traits>

#include "core/backend.h"
#include "core/cpu/bf16_chunks.h"
#include "core/cpu/strided_loop.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

// fn::unary, except f32 exp, elu and gelu: libm's expf / expm1f / erff are calls that block
// vectorization, so they are the branch-free polynomials of vec_math.h (exp within 2 ulp; 0 below
// -87.34, +inf above 88.376).
template <UnaryOp Op, typename T>
RELPOS_VEC_INLINE T cpu_unary(T x, T s) {
  if constexpr (Op == UnaryOp::exp && std::is_same_v<T, float>)
    return exp_f32(x);
  else if constexpr (Op == UnaryOp::elu && std::is_same_v<T, float>)
    return select_bits(positive_bits(x), x, s * expm1_f32(x));
  else if constexpr (Op == UnaryOp::gelu && std::is_same_v<T, float>)
    return x * normal_cdf_f32(x);
  else
    return fn::unary<Op, T>(x, s);
}

// Contiguous x and out: one flat loop, also built for AVX2+FMA and picked at load time.
template <UnaryOp Op, typename T>
RELPOS_SIMD_CLONES void unary_dense(const T* x, T* out, int64_t n, T s) {
  for (int64_t i = 0; i < n; ++i) out[i] = cpu_unary<Op, T>(x[i], s);
}

}  // namespace

void unary(UnaryOp op, double scalar, const Tensor& x, const Tensor& out) {
  // x: [...] any strides, out: [...] contiguous, same dtype (bf16: each value in f32, rounded).
  visit_unary(op, [&](auto op_tag) {
    using OpTag = decltype(op_tag);  // a type, which the inner lambdas see without capture
    constexpr UnaryOp Op = OpTag::value;
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T s = static_cast<T>(scalar);
      if (!x.is_contiguous()) {
        map_elementwise<T, T>(out, {&x}, [s](T v) { return cpu_unary<OpTag::value, T>(v, s); });
        return;
      }
      const T* px = x.data<T>();  // px, po: [n]
      T* po = out.data<T>();
      for_each_dense_block(x.numel(), [&](int64_t begin, int64_t end) {
        unary_dense<OpTag::value, T>(px + begin, po + begin, end - begin, s);
      });
    };
    if (x.dtype() == DType::bf16) {  // read and written as bf16, computed in f32
      const auto s = static_cast<float>(scalar);
      if (!x.is_contiguous()) {
        map_elementwise<bf16, bf16>(
            out, {&x}, [s](bf16 v) { return bf16(cpu_unary<OpTag::value, float>(v, s)); });
        return;
      }
      const bf16* px = x.data<bf16>();  // px, po: [n]
      bf16* po = out.data<bf16>();
      for_each_dense_block(x.numel(), [&](int64_t begin, int64_t end) {
        through_f32_chunks<1>({px}, po, begin, end,
                              [s](const std::array<const float*, 1>& in, float* o, int64_t m) {
                                unary_dense<OpTag::value, float>(in[0], o, m, s);
                              });
      });
    } else if constexpr (unary_accepts_integers(Op))
      dispatch_dtype(x.dtype(), run);
    else
      dispatch_floating(x.dtype(), "unary", run);
  });
}

}  // namespace relpos::cpu
