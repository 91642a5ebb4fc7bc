// Pointwise functions of one Var. Backward multiplies the output gradient by f'(x), through the
// fused core backward ops where they exist (relu/elu/gelu from x, tanh/sigmoid from the output y).
#include "autograd/functions.h"

namespace relpos {

Var neg(const Var& x) {
  return make_result("neg", neg(x.value()), {x},
                     [](const Tensor& g) { return std::vector<Tensor>{neg(g)}; });
}

Var exp(const Var& x) {
  Tensor y = exp(x.value());
  // d exp(x) = exp(x): the output is the derivative.
  return make_result("exp", y, {x},
                     [y](const Tensor& g) { return std::vector<Tensor>{mul(g, y)}; });
}

Var log(const Var& x) {
  return make_result("log", log(x.value()), {x},
                     [v = x.value()](const Tensor& g) { return std::vector<Tensor>{div(g, v)}; });
}

Var sqrt(const Var& x) {
  Tensor y = sqrt(x.value());
  // d sqrt(x) = 1 / (2 sqrt(x))
  return make_result("sqrt", y, {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{div(mul_scalar(g, 0.5), y)};
  });
}

Var rsqrt(const Var& x) {
  Tensor y = rsqrt(x.value());
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
  return make_result("rsqrt", y, {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{mul(g, mul_scalar(pow(y, 3.0), -0.5))};
  });
}

Var tanh(const Var& x) {
  Tensor y = tanh(x.value());
  return make_result("tanh", y, {x},
                     [y](const Tensor& g) { return std::vector<Tensor>{tanh_backward(y, g)}; });
}

Var sin(const Var& x) {
  const Tensor xv = x.value();
  return make_result("sin", sin(xv), {x},
                     [xv](const Tensor& g) { return std::vector<Tensor>{mul(g, cos(xv))}; });
}

Var cos(const Var& x) {
  const Tensor xv = x.value();
  return make_result("cos", cos(xv), {x},
                     [xv](const Tensor& g) { return std::vector<Tensor>{mul(g, neg(sin(xv)))}; });
}

Var sigmoid(const Var& x) {
  Tensor y = sigmoid(x.value());
  return make_result("sigmoid", y, {x},
                     [y](const Tensor& g) { return std::vector<Tensor>{sigmoid_backward(y, g)}; });
}

Var relu(const Var& x) {
  return make_result("relu", relu(x.value()), {x}, [v = x.value()](const Tensor& g) {
    return std::vector<Tensor>{relu_backward(v, g)};
  });
}

Var elu(const Var& x, double alpha) {
  return make_result("elu", elu(x.value(), alpha), {x}, [v = x.value(), alpha](const Tensor& g) {
    return std::vector<Tensor>{elu_backward(v, g, alpha)};
  });
}

Var gelu(const Var& x) {
  return make_result("gelu", gelu(x.value()), {x}, [v = x.value()](const Tensor& g) {
    return std::vector<Tensor>{gelu_backward(v, g)};
  });
}

Var abs(const Var& x) {
  return make_result("abs", abs(x.value()), {x}, [v = x.value()](const Tensor& g) {
    // sign(x) = [x > 0] - [x < 0], so 0 at 0.
    const Tensor zero = zeros({}, v.dtype(), v.device());
    const Tensor sign = sub(cast(gt(v, zero), g.dtype()), cast(lt(v, zero), g.dtype()));
    return std::vector<Tensor>{mul(g, sign)};
  });
}

Var pow(const Var& x, double exponent) {
  return make_result("pow", pow(x.value(), exponent), {x},
                     [v = x.value(), exponent](const Tensor& g) {
                       // d x^p = p x^(p-1); x^0 is constant (and 0 * 0^(-1) would be NaN).
                       if (exponent == 0) return std::vector<Tensor>{zeros_like(v)};
                       const Tensor slope = mul_scalar(pow(v, exponent - 1), exponent);
                       return std::vector<Tensor>{mul(g, slope)};
                     });
}

Var add_scalar(const Var& x, double s) {
  return make_result("add_scalar", add_scalar(x.value(), s), {x},
                     [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Var mul_scalar(const Var& x, double s) {
  return make_result("mul_scalar", mul_scalar(x.value(), s), {x},
                     [s](const Tensor& g) { return std::vector<Tensor>{mul_scalar(g, s)}; });
}

}  // namespace relpos
