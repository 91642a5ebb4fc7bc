// matmul / bmm. For C = op(A) op(B) (op = optional transpose of the last two dims):
//   C = A B     : dA = dC B^T,     dB = A^T dC
//   C = A^T B   : dA = B dC^T,     dB = A dC
//   C = A B^T   : dA = dC B,       dB = dC^T A
//   C = A^T B^T : dA = B^T dC^T,   dB = dC^T A^T
// each computed by matmul with transpose flags (no copies); broadcast batch dims are reduced.
#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {

namespace {
// Under bf16 autocast (autograd/autocast.h) x and y are saved rounded to bf16 and every product
// here, forward and backward, is their f32-accumulated product in f32.
Var matmul_impl(const char* name, const Var& a, const Var& b, bool ta, bool tb, bool batched) {
  const bool both_f32 = a.value().dtype() == DType::f32 && b.value().dtype() == DType::f32;
  const Tensor x = both_f32 ? autocast_operand(a.value()) : a.value();
  const Tensor y = both_f32 ? autocast_operand(b.value()) : b.value();
  Tensor out = product(x, y, ta, tb, batched);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  return make_result(name, out, {a, b}, [x, y, ta, tb, ga, gb, batched](const Tensor& g_in) {
    // Rounded once for both products (product() leaves a bf16 operand as it is).
    const Tensor g = x.dtype() == DType::bf16 ? cast(g_in, DType::bf16) : g_in;
    const auto mm = [batched](const Tensor& p, const Tensor& q, bool tp, bool tq) {
      return product(p, q, tp, tq, batched);
    };
    Tensor da, db;
    if (ga) da = !ta ? mm(g, y, false, !tb) : (tb ? mm(y, g, true, true) : mm(y, g, false, true));
    if (gb) db = !tb ? mm(x, g, !ta, false) : (ta ? mm(g, x, true, true) : mm(g, x, true, false));
    return std::vector<Tensor>{ga ? sum_to(da, x.shape()) : Tensor(),
                               gb ? sum_to(db, y.shape()) : Tensor()};
  });
}
}  // namespace

Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
  return matmul_impl("matmul", a, b, trans_a, trans_b, false);
}
Var bmm(const Var& a, const Var& b, bool trans_a, bool trans_b) {
  return matmul_impl("bmm", a, b, trans_a, trans_b, true);
}

}  // namespace relpos
