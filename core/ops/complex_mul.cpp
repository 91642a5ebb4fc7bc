// Entry point of complex_mul: validate, broadcast, allocate, dispatch.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

Tensor complex_mul(const Tensor& a, const Tensor& b, bool conj_b) {
  const char* name = "complex_mul";
  check_defined(name, a, "a");
  check_defined(name, b, "b");
  check_same_device(name, {&a, &b});
  check_same_dtype(name, {&a, &b});
  check_floating(name, a);
  RELPOS_CHECK(a.dim() >= 1 && a.size(-1) == 2 && b.dim() >= 1 && b.size(-1) == 2, name,
               "expects complex tensors [..., 2], got {} and {}", a.str(), b.str());
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  const Tensor ae = a.expand(shape), be = b.expand(shape);
  if (a.device().is_cpu())
    cpu::complex_mul(ae, be, conj_b, out);
  else
    cuda::complex_mul(ae, be, conj_b, out);
  return out;
}

}  // namespace relpos
