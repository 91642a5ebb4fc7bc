// Entry points of the elementwise unary ops (neg, exp, ..., add_scalar, mul_scalar): validate
// the dtype (and, for integer tensors, the scalar), allocate the output, dispatch on the device.
#include <cmath>
#include <limits>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

// Integer tensors keep their dtype, so the scalar must be an integer that the dtype can hold.
void check_integer_scalar(const char* op, const Tensor& x, double s) {
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool fits = std::nearbyint(s) == s &&
                      s >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
                      s < static_cast<double>(std::numeric_limits<T>::max()) + 1;
    RELPOS_CHECK(fits, op, "scalar {} is not an integer that {} holds; cast x to a floating dtype",
                 s, x.str());
  });
}

Tensor unary_op(UnaryOp op, const char* name, const Tensor& x, double scalar = 0) {
  check_defined(name, x);
  if (!is_floating_or_bf16(x.dtype())) {
    RELPOS_CHECK(unary_accepts_integers(op), name,
                 "expects a floating dtype (f32, f64 or bf16), got {}", x.str());
    if (op == UnaryOp::add_scalar || op == UnaryOp::mul_scalar)
      check_integer_scalar(name, x, scalar);
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.device().is_cpu())
    cpu::unary(op, scalar, x, out);
  else
    cuda::unary(op, scalar, x, out);
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) {
  return unary_op(UnaryOp::neg, "neg", x);
}
Tensor exp(const Tensor& x) {
  return unary_op(UnaryOp::exp, "exp", x);
}
Tensor log(const Tensor& x) {
  return unary_op(UnaryOp::log, "log", x);
}
Tensor sqrt(const Tensor& x) {
  return unary_op(UnaryOp::sqrt, "sqrt", x);
}
Tensor rsqrt(const Tensor& x) {
  return unary_op(UnaryOp::rsqrt, "rsqrt", x);
}
Tensor tanh(const Tensor& x) {
  return unary_op(UnaryOp::tanh, "tanh", x);
}
Tensor sigmoid(const Tensor& x) {
  return unary_op(UnaryOp::sigmoid, "sigmoid", x);
}
Tensor sin(const Tensor& x) {
  return unary_op(UnaryOp::sin, "sin", x);
}
Tensor cos(const Tensor& x) {
  return unary_op(UnaryOp::cos, "cos", x);
}
Tensor relu(const Tensor& x) {
  return unary_op(UnaryOp::relu, "relu", x);
}
Tensor elu(const Tensor& x, double alpha) {
  return unary_op(UnaryOp::elu, "elu", x, alpha);
}
Tensor gelu(const Tensor& x) {
  return unary_op(UnaryOp::gelu, "gelu", x);
}
Tensor abs(const Tensor& x) {
  return unary_op(UnaryOp::abs, "abs", x);
}
Tensor pow(const Tensor& x, double exponent) {
  return unary_op(UnaryOp::pow, "pow", x, exponent);
}
Tensor add_scalar(const Tensor& x, double s) {
  return unary_op(UnaryOp::add_scalar, "add_scalar", x, s);
}
Tensor mul_scalar(const Tensor& x, double s) {
  return unary_op(UnaryOp::mul_scalar, "mul_scalar", x, s);
}

}  // namespace relpos
