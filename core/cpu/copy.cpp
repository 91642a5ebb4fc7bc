// CPU copy (with dtype conversion, bf16 included), fill and arange.
#include "core/backend.h"
#include "core/cpu/strided_loop.h"

namespace relpos::cpu {

void copy(const Tensor& src, const Tensor& dst) {
  visit_dtype_or_bf16(dst.dtype(), [&](auto out_tag) {
    using TO = typename decltype(out_tag)::type;
    visit_dtype_or_bf16(src.dtype(), [&](auto in_tag) {
      using TI = typename decltype(in_tag)::type;
      map_elementwise<TO, TI>(dst, {&src}, [](TI x) { return static_cast<TO>(x); });
    });
  });
}

void fill(const Tensor& dst, double value) {
  visit_dtype_or_bf16(dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = static_cast<T>(value);
    map_elementwise<T>(dst, {}, [v]() { return v; });
  });
}

void arange(const Tensor& out, double start, double step) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<T>(start + step * i);
  });
}

}  // namespace relpos::cpu
