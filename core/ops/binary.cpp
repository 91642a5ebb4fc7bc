// Entry points of the broadcasting binary ops (add, sub, mul, div, maximum, minimum) and of the
// fused activation gradients (relu_backward, ...): validate, broadcast, allocate, dispatch.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

Tensor binary_op(BinaryOp op, const char* name, const Tensor& a, const Tensor& b,
                 double scalar = 0) {
  check_same_device(name, {&a, &b});
  check_same_dtype(name, {&a, &b});
  RELPOS_CHECK(is_floating_or_bf16(a.dtype()) || binary_accepts_integers(op), name,
               "expects a floating dtype (f32, f64 or bf16), got {}", a.str());
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor ae = a.expand(shape), be = b.expand(shape);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (a.device().is_cpu())
    cpu::binary(op, scalar, ae, be, out);
  else
    cuda::binary(op, scalar, ae, be, out);
  return out;
}

// The gradient ops take the forward tensor and its gradient, which always have one shape.
Tensor grad_op(BinaryOp op, const char* name, const Tensor& x, const Tensor& grad,
               double scalar = 0) {
  check_defined(name, x);
  check_defined(name, grad, "grad");
  RELPOS_CHECK(x.shape() == grad.shape(), name, "x is {} but grad is {}; shapes must be equal",
               x.str(), grad.str());
  return binary_op(op, name, x, grad, scalar);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::add, "add", a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::sub, "sub", a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::mul, "mul", a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::div, "div", a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::maximum, "maximum", a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::minimum, "minimum", a, b);
}

Tensor relu_backward(const Tensor& x, const Tensor& grad) {
  return grad_op(BinaryOp::relu_grad, "relu_backward", x, grad);
}
Tensor elu_backward(const Tensor& x, const Tensor& grad, double alpha) {
  return grad_op(BinaryOp::elu_grad, "elu_backward", x, grad, alpha);
}
Tensor gelu_backward(const Tensor& x, const Tensor& grad) {
  return grad_op(BinaryOp::gelu_grad, "gelu_backward", x, grad);
}
Tensor tanh_backward(const Tensor& y, const Tensor& grad) {
  return grad_op(BinaryOp::tanh_grad, "tanh_backward", y, grad);
}
Tensor sigmoid_backward(const Tensor& y, const Tensor& grad) {
  return grad_op(BinaryOp::sigmoid_grad, "sigmoid_backward", y, grad);
}

}  // namespace relpos
