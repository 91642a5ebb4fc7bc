// Entry points of the whole-tensor checks: all_finite (a kernel per backend) and allclose
// (composed on the CPU from the values as doubles).
#include <cmath>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

bool all_finite(const Tensor& x) {
  check_defined("all_finite", x);
  if (x.dtype() == DType::bf16) return all_finite(cast(x, DType::f32));  // exact
  if (!is_floating(x.dtype())) return true;  // integers are always finite
  return x.device().is_cpu() ? cpu::all_finite(x) : cuda::all_finite(x);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  check_same_device("allclose", {&a, &b});
  RELPOS_CHECK(rtol >= 0 && atol >= 0, "allclose",
               "tolerances must be non-negative: rtol {} atol {}", rtol, atol);
  if (a.shape() != b.shape()) return false;
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    // Equal infinities are close, other infinities never; NaN is close to nothing.
    const bool close = va[i] == vb[i] || (std::isfinite(va[i]) && std::isfinite(vb[i]) &&
                                          std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i]));
    if (!close) return false;
  }
  return true;
}

}  // namespace relpos
