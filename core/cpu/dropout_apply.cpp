// CPU kernel of dropout's product: out = x * (keep ? scale : 0) with the u8 keep mask read as it
// is, where a product with the mask cast to x's dtype wrote and read a copy of it four (f32) or
// eight (f64) times its size. The bits are those of x * (mask * scale) on that cast: mask * scale
// is scale or 0 exactly. x * 0 keeps NaN -> NaN. bf16 x: in f32, rounded once.
#include "core/backend.h"
#include "core/cpu/strided_loop.h"
#include "core/cpu/vec_math.h"

namespace relpos::cpu {

namespace {

template <typename C>
RELPOS_VEC_INLINE C dropped(C x, uint8_t keep, C scale) {
  return x * (keep != 0 ? scale : C(0));
}

// Contiguous x, mask and out of one shape: one flat loop, also built for AVX2.
template <typename T>
RELPOS_SIMD_CLONES void dropout_dense(const T* x, const uint8_t* keep, T* out, int64_t n, T scale) {
  for (int64_t i = 0; i < n; ++i) out[i] = dropped<T>(x[i], keep[i], scale);
}

}  // namespace

void dropout_apply(const Tensor& x, const Tensor& mask, double scale, const Tensor& out) {
  // x: [...] out's dtype, mask: [...] u8, both expanded to out's shape; out: [...] contiguous.
  if (x.dtype() == DType::bf16) {
    const auto s = static_cast<float>(scale);
    map_elementwise<bf16, bf16, uint8_t>(
        out, {&x, &mask}, [s](bf16 v, uint8_t keep) { return bf16(dropped<float>(v, keep, s)); });
    return;
  }
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto s = static_cast<T>(scale);
    if (!x.is_contiguous() || !mask.is_contiguous()) {  // broadcast or strided operands
      map_elementwise<T, T, uint8_t>(out, {&x, &mask},
                                     [s](T v, uint8_t keep) { return dropped<T>(v, keep, s); });
      return;
    }
    const T* px = x.data<T>();  // px, pm, po: [n]
    const uint8_t* pm = mask.data<uint8_t>();
    T* po = out.data<T>();
    for_each_dense_block(out.numel(), [&](int64_t begin, int64_t end) {
      dropout_dense<T>(px + begin, pm + begin, po + begin, end - begin, s);
    });
  });
}

}  // namespace relpos::cpu
