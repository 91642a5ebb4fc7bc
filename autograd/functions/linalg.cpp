// matmul / bmm. For C = op(A) op(B) (op = optional transpose of the last two dims):
//   C = A B     : dA = dC B^T,     dB = A^T dC
//   C = A^T B   : dA = B dC^T,     dB = A dC
//   C = A B^T   : dA = dC B,       dB = dC^T A
//   C = A^T B^T : dA = B^T dC^T,   dB = dC^T A^T
// each computed by matmul with transpose flags (no copies); broadcast batch dims are reduced.
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {

namespace {
Var matmul_impl(const char* name, const Var& a, const Var& b, bool ta, bool tb, bool batched) {
  const Tensor& x = a.value();
  const Tensor& y = b.value();
  Tensor out = batched ? bmm(x, y, ta, tb) : matmul(x, y, ta, tb);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  return make_result(name, out, {a, b}, [x, y, ta, tb, ga, gb](const Tensor& g) {
    Tensor da, db;
    if (ga)
      da = !ta ? matmul(g, y, false, !tb)
               : (tb ? matmul(y, g, true, true) : matmul(y, g, false, true));
    if (gb)
      db = !tb ? matmul(x, g, !ta, false)
               : (ta ? matmul(g, x, true, true) : matmul(g, x, true, false));
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
