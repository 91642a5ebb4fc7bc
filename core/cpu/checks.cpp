// CPU kernel of all_finite: counts NaN/Inf elements of a floating tensor in one parallel pass.
#include <cmath>

#include "core/backend.h"

namespace relpos::cpu {

bool all_finite(const Tensor& x) {
  const Tensor xc = x.contiguous();  // xc: [numel]
  const int64_t n = xc.numel();
  return dispatch_floating(x.dtype(), "all_finite", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = xc.data<T>();
    int64_t bad = 0;
#pragma omp parallel for simd reduction(+ : bad) if (n > 32768)
    for (int64_t i = 0; i < n; ++i) bad += std::isfinite(p[i]) ? 0 : 1;
    return bad == 0;
  });
}

}  // namespace relpos::cpu
