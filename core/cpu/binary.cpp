// CPU kernel of the broadcasting binary ops (add, ..., the fused activation gradients): the
// functors fn::binary<Op, T> of core/functors.h in one flat vectorized loop for contiguous
// operands (bf16 ones in f32 chunks, core/cpu/bf16_chunks.h), and mapped by map_elementwise over
// operands already expanded to the output's shape (broadcast dims have stride 0) otherwise.
#include <algorithm>
#include <type_traits>

#include "core/backend.h"
#include "core/cpu/bf16_chunks.h"
#include "core/cpu/strided_loop.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

// fn::binary, except f32 elu_grad and gelu_grad, whose libm exp and erf calls are the
// polynomials of vec_math.h.
template <BinaryOp Op, typename T>
RELPOS_VEC_INLINE T cpu_binary(T a, T b, T s) {
  if constexpr (Op == BinaryOp::elu_grad && std::is_same_v<T, float>)
    return select_bits(positive_bits(a), b, b * s * exp_f32(a));
  else if constexpr (Op == BinaryOp::gelu_grad && std::is_same_v<T, float>)
    return b * (normal_cdf_f32(a) + a * float(fn::kInvSqrt2Pi) * exp_f32(-0.5f * a * a));
  else
    return fn::binary<Op, T>(a, b, s);
}

// Contiguous a, b and out of one shape: one flat loop, also built for AVX2+FMA.
template <BinaryOp Op, typename T>
RELPOS_SIMD_CLONES void binary_dense(const T* a, const T* b, T* out, int64_t n, T s) {
  for (int64_t i = 0; i < n; ++i) out[i] = cpu_binary<Op, T>(a[i], b[i], s);
}

}  // namespace

void binary(BinaryOp op, double scalar, const Tensor& a, const Tensor& b, const Tensor& out) {
  // a, b: [...] expanded to out's shape; out: [...] contiguous; one dtype (bf16: in f32, rounded).
  visit_binary(op, [&](auto op_tag) {
    using OpTag = decltype(op_tag);  // a type, which the inner lambdas see without capture
    constexpr BinaryOp Op = OpTag::value;
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T s = static_cast<T>(scalar);
      if (!a.is_contiguous() || !b.is_contiguous()) {  // broadcast or strided operands
        map_elementwise<T, T, T>(out, {&a, &b},
                                 [s](T x, T y) { return cpu_binary<OpTag::value, T>(x, y, s); });
        return;
      }
      const T *pa = a.data<T>(), *pb = b.data<T>();  // pa, pb, po: [n]
      T* po = out.data<T>();
      for_each_dense_block(out.numel(), [&](int64_t begin, int64_t end) {
        binary_dense<OpTag::value, T>(pa + begin, pb + begin, po + begin, end - begin, s);
      });
    };
    if (a.dtype() == DType::bf16) {  // read and written as bf16, computed in f32
      const auto s = static_cast<float>(scalar);
      if (!a.is_contiguous() || !b.is_contiguous()) {
        map_elementwise<bf16, bf16, bf16>(out, {&a, &b}, [s](bf16 x, bf16 y) {
          return bf16(cpu_binary<OpTag::value, float>(x, y, s));
        });
        return;
      }
      const bf16 *pa = a.data<bf16>(), *pb = b.data<bf16>();  // pa, pb, po: [n]
      bf16* po = out.data<bf16>();
      for_each_dense_block(out.numel(), [&](int64_t begin, int64_t end) {
        through_f32_chunks<2>({pa, pb}, po, begin, end,
                              [s](const std::array<const float*, 2>& in, float* o, int64_t m) {
                                binary_dense<OpTag::value, float>(in[0], in[1], o, m, s);
                              });
      });
    } else if constexpr (binary_accepts_integers(Op))
      dispatch_dtype(a.dtype(), run);
    else
      dispatch_floating(a.dtype(), "binary", run);
  });
}

}  // namespace relpos::cpu
