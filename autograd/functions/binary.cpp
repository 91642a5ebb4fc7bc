// Broadcasting binary functions, where and masked_fill. Gradients are computed at the output's
// (broadcast) shape and reduced to each input's shape by sum_to.
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {

Var add(const Var& a, const Var& b) {
  const Shape sa = a.shape(), sb = b.shape();
  return make_result("add", add(a.value(), b.value()), {a, b}, [sa, sb](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
  });
}

Var sub(const Var& a, const Var& b) {
  const Shape sa = a.shape(), sb = b.shape();
  return make_result("sub", sub(a.value(), b.value()), {a, b}, [sa, sb](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(neg(g), sb)};
  });
}

Var mul(const Var& a, const Var& b) {
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  return make_result("mul", mul(a.value(), b.value()), {a, b},
                     [x = a.value(), y = b.value(), ga, gb](const Tensor& g) {
                       return std::vector<Tensor>{ga ? sum_to(mul(g, y), x.shape()) : Tensor(),
                                                  gb ? sum_to(mul(g, x), y.shape()) : Tensor()};
                     });
}

Var div(const Var& a, const Var& b) {
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  Tensor out = div(a.value(), b.value());
  // d(a/b)/da = 1/b, d(a/b)/db = -(a/b)/b
  return make_result(
      "div", out, {a, b}, [sa = a.shape(), y = b.value(), out, ga, gb](const Tensor& g) {
        const Tensor g_over_b = div(g, y);
        return std::vector<Tensor>{ga ? sum_to(g_over_b, sa) : Tensor(),
                                   gb ? sum_to(neg(mul(g_over_b, out)), y.shape()) : Tensor()};
      });
}

namespace {
// maximum/minimum: the gradient flows to the operand equal to the output; on ties (a == b) it
// is split in half between them, as torch does.
Var select_binary(const char* name, const Var& a, const Var& b, bool take_max) {
  const Tensor& x = a.value();
  const Tensor& y = b.value();
  Tensor out = take_max ? maximum(x, y) : minimum(x, y);
  return make_result(name, out, {a, b}, [x, y, out](const Tensor& g) {
    const Tensor half_ties = mul_scalar(cast(eq(x, y), g.dtype()), 0.5);
    const Tensor wa = sub(cast(eq(out, x), g.dtype()), half_ties);
    const Tensor wb = sub(cast(eq(out, y), g.dtype()), half_ties);
    return std::vector<Tensor>{sum_to(mul(g, wa), x.shape()), sum_to(mul(g, wb), y.shape())};
  });
}
}  // namespace

Var maximum(const Var& a, const Var& b) {
  return select_binary("maximum", a, b, true);
}
Var minimum(const Var& a, const Var& b) {
  return select_binary("minimum", a, b, false);
}

Var where(const Tensor& cond, const Var& a, const Var& b) {
  Tensor out = where(cond, a.value(), b.value());
  return make_result("where", out, {a, b}, [cond, sa = a.shape(), sb = b.shape()](const Tensor& g) {
    const Tensor zero = zeros({}, g.dtype(), g.device());
    return std::vector<Tensor>{sum_to(where(cond, g, zero), sa), sum_to(where(cond, zero, g), sb)};
  });
}

Var masked_fill(const Var& x, const Tensor& mask, double value) {
  return make_result(
      "masked_fill", masked_fill(x.value(), mask, value), {x},
      [mask](const Tensor& g) { return std::vector<Tensor>{masked_fill(g, mask, 0.0)}; });
}

}  // namespace relpos
