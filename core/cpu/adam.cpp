// CPU kernel of adam_update (core/ops.h): core/adam_math.h's element update in one flat loop.
// Built with -ffp-contract=off (core/CMakeLists.txt): the AVX2 + FMA clone must not fuse the
// formula's products into its sums, or it would round differently from the op-by-op form.
#include <algorithm>

#include "core/adam_math.h"
#include "core/backend.h"
#include "core/cpu/strided_loop.h"
#include "core/cpu/vec_math.h"
#include "core/ops.h"

namespace relpos::cpu {

namespace {

// p, g, m, v and the outputs: [n] contiguous.
template <typename T>
RELPOS_SIMD_CLONES void adam_dense(const AdamScalars<T>& s, const T* p, const T* g, const T* m,
                                   const T* v, T* p_out, T* m_out, T* v_out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    adam_element(s, p[i], g[i], m[i], v[i], p_out[i], m_out[i], v_out[i]);
}

}  // namespace

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const AdamCoefficients& c, const AdamUpdate& out) {
  dispatch_floating(param.dtype(), "adam_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const AdamScalars<T> s =
        adam_scalars<T>(c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.decoupled, c.step);
    const T *p = param.data<T>(), *g = grad.data<T>();
    const T *m = exp_avg.data<T>(), *v = exp_avg_sq.data<T>();
    T *p_out = out.param.data<T>(), *m_out = out.exp_avg.data<T>();
    T* v_out = out.exp_avg_sq.data<T>();
    for_each_dense_block(param.numel(), [&](int64_t at, int64_t end) {
      adam_dense(s, p + at, g + at, m + at, v + at, p_out + at, m_out + at, v_out + at, end - at);
    });
  });
}

}  // namespace relpos::cpu
