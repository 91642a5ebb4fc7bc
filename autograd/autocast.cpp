#include "autograd/autocast.h"

#include "core/ops.h"

namespace relpos {

namespace {
thread_local DType g_autocast = DType::f32;
}  // namespace

DType autocast_dtype() {
  return g_autocast;
}

AutocastGuard::AutocastGuard(DType dtype) : previous_(g_autocast) {
  RELPOS_CHECK(dtype == DType::f32 || dtype == DType::bf16, "autocast",
               "products can run in f32 or bf16, not {}", dtype_name(dtype));
  g_autocast = dtype;
}
AutocastGuard::~AutocastGuard() {
  g_autocast = previous_;
}

Tensor autocast_operand(const Tensor& x) {
  return g_autocast == DType::bf16 && x.dtype() == DType::f32 ? cast(x, DType::bf16) : x;
}

Tensor product(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, bool batched) {
  if (a.dtype() != DType::bf16 && b.dtype() != DType::bf16)
    return batched ? bmm(a, b, trans_a, trans_b) : matmul(a, b, trans_a, trans_b);
  const Tensor a16 = cast(a, DType::bf16), b16 = cast(b, DType::bf16);
  return batched ? bmm(a16, b16, trans_a, trans_b, DType::f32)
                 : matmul(a16, b16, trans_a, trans_b, DType::f32);
}

}  // namespace relpos
