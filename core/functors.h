// Pointwise math written once for both backends: the CPU loops (core/cpu/) and the CUDA kernels
// (core/cuda/) instantiate these functors, so the math is tested on the CPU even without a GPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/host_device.h"

namespace relpos {

enum class UnaryOp : uint8_t {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  sigmoid,
  sin,
  cos,
  relu,
  elu,
  gelu,
  abs,
  pow,
  add_scalar,
  mul_scalar
};
enum class BinaryOp : uint8_t {
  add,
  sub,
  mul,
  div,
  maximum,
  minimum,
  // (a, b) = (x or y, grad): grad * f'(.)
  relu_grad,
  elu_grad,
  gelu_grad,
  tanh_grad,
  sigmoid_grad
};
enum class CompareOp : uint8_t { eq, ne, lt, le, gt, ge };
enum class ReduceOp : uint8_t { sum, max, logsumexp };

// Ops that are defined for integer dtypes too.
constexpr bool unary_accepts_integers(UnaryOp op) {
  return op == UnaryOp::neg || op == UnaryOp::abs || op == UnaryOp::add_scalar ||
         op == UnaryOp::mul_scalar;
}
constexpr bool binary_accepts_integers(BinaryOp op) {
  return op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::mul ||
         op == BinaryOp::maximum || op == BinaryOp::minimum;
}

namespace fn {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

template <typename T>
RELPOS_HOST_DEVICE T sigmoid(T x) {
  // Never exponentiates a large positive number: exp(-|x|) <= 1.
  const T e = std::exp(-std::abs(x));
  return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}

// Phi(x) = erfc(-x/sqrt2)/2: unlike (1 + erf(x/sqrt2))/2, it keeps its relative accuracy for
// x << 0, where 1 + erf cancels to 0 (GELU's tail).
template <typename T>
RELPOS_HOST_DEVICE T normal_cdf(T x) {
  return T(0.5) * std::erfc(-x * T(kInvSqrt2));
}

// `s` carries the scalar argument (elu alpha, pow exponent, the added or multiplied scalar).
template <UnaryOp Op, typename T>
RELPOS_HOST_DEVICE T unary(T x, T s) {
  if constexpr (Op == UnaryOp::neg)
    return -x;
  else if constexpr (Op == UnaryOp::abs) {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else
      return x < T(0) ? -x : x;
  } else if constexpr (Op == UnaryOp::add_scalar)
    return x + s;
  else if constexpr (Op == UnaryOp::mul_scalar)
    return x * s;
  else if constexpr (Op == UnaryOp::exp)
    return std::exp(x);
  else if constexpr (Op == UnaryOp::log)
    return std::log(x);
  else if constexpr (Op == UnaryOp::sqrt)
    return std::sqrt(x);
  else if constexpr (Op == UnaryOp::rsqrt)
    return T(1) / std::sqrt(x);
  else if constexpr (Op == UnaryOp::tanh)
    return std::tanh(x);
  else if constexpr (Op == UnaryOp::sigmoid)
    return sigmoid(x);
  else if constexpr (Op == UnaryOp::sin)
    return std::sin(x);
  else if constexpr (Op == UnaryOp::cos)
    return std::cos(x);
  else if constexpr (Op == UnaryOp::relu)  // NaN propagates, as in torch.relu
    return x <= T(0) ? T(0) : x;
  else if constexpr (Op == UnaryOp::elu)
    return x > T(0) ? x : s * std::expm1(x);
  else if constexpr (Op == UnaryOp::gelu)
    return x * normal_cdf(x);
  else {
    static_assert(Op == UnaryOp::pow);
    return std::pow(x, s);
  }
}

template <BinaryOp Op, typename T>
RELPOS_HOST_DEVICE T binary(T a, T b, T s) {
  if constexpr (Op == BinaryOp::add)
    return a + b;
  else if constexpr (Op == BinaryOp::sub)
    return a - b;
  else if constexpr (Op == BinaryOp::mul)
    return a * b;
  else if constexpr (Op == BinaryOp::div)
    return a / b;
  // NaN propagates as in torch.maximum / minimum.
  else if constexpr (Op == BinaryOp::maximum)
    return (a != a || a > b) ? a : b;
  else if constexpr (Op == BinaryOp::minimum)
    return (a != a || a < b) ? a : b;
  else if constexpr (Op == BinaryOp::relu_grad)
    return a > T(0) ? b : T(0);
  else if constexpr (Op == BinaryOp::elu_grad)
    return a > T(0) ? b : b * s * std::exp(a);
  else if constexpr (Op == BinaryOp::gelu_grad)  // d/dx x Phi(x) = Phi(x) + x phi(x)
    return b * (normal_cdf(a) + a * T(kInvSqrt2Pi) * std::exp(T(-0.5) * a * a));
  else if constexpr (Op == BinaryOp::tanh_grad)
    return b * (T(1) - a * a);
  else {
    static_assert(Op == BinaryOp::sigmoid_grad);
    return b * a * (T(1) - a);
  }
}

template <CompareOp Op, typename T>
RELPOS_HOST_DEVICE uint8_t compare(T a, T b) {
  if constexpr (Op == CompareOp::eq)
    return a == b;
  else if constexpr (Op == CompareOp::ne)
    return a != b;
  else if constexpr (Op == CompareOp::lt)
    return a < b;
  else if constexpr (Op == CompareOp::le)
    return a <= b;
  else if constexpr (Op == CompareOp::gt)
    return a > b;
  else
    return a >= b;
}

}  // namespace fn

// Calls f(std::integral_constant<Op, op>{}) so kernels are instantiated once per op.
template <typename F>
decltype(auto) visit_unary(UnaryOp op, F&& f) {
  using U = UnaryOp;
  switch (op) {
    case U::neg:
      return f(std::integral_constant<U, U::neg>{});
    case U::exp:
      return f(std::integral_constant<U, U::exp>{});
    case U::log:
      return f(std::integral_constant<U, U::log>{});
    case U::sqrt:
      return f(std::integral_constant<U, U::sqrt>{});
    case U::rsqrt:
      return f(std::integral_constant<U, U::rsqrt>{});
    case U::tanh:
      return f(std::integral_constant<U, U::tanh>{});
    case U::sigmoid:
      return f(std::integral_constant<U, U::sigmoid>{});
    case U::sin:
      return f(std::integral_constant<U, U::sin>{});
    case U::cos:
      return f(std::integral_constant<U, U::cos>{});
    case U::relu:
      return f(std::integral_constant<U, U::relu>{});
    case U::elu:
      return f(std::integral_constant<U, U::elu>{});
    case U::gelu:
      return f(std::integral_constant<U, U::gelu>{});
    case U::abs:
      return f(std::integral_constant<U, U::abs>{});
    case U::pow:
      return f(std::integral_constant<U, U::pow>{});
    case U::add_scalar:
      return f(std::integral_constant<U, U::add_scalar>{});
    case U::mul_scalar:
      return f(std::integral_constant<U, U::mul_scalar>{});
  }
  return f(std::integral_constant<U, U::neg>{});
}

template <typename F>
decltype(auto) visit_binary(BinaryOp op, F&& f) {
  using B = BinaryOp;
  switch (op) {
    case B::add:
      return f(std::integral_constant<B, B::add>{});
    case B::sub:
      return f(std::integral_constant<B, B::sub>{});
    case B::mul:
      return f(std::integral_constant<B, B::mul>{});
    case B::div:
      return f(std::integral_constant<B, B::div>{});
    case B::maximum:
      return f(std::integral_constant<B, B::maximum>{});
    case B::minimum:
      return f(std::integral_constant<B, B::minimum>{});
    case B::relu_grad:
      return f(std::integral_constant<B, B::relu_grad>{});
    case B::elu_grad:
      return f(std::integral_constant<B, B::elu_grad>{});
    case B::gelu_grad:
      return f(std::integral_constant<B, B::gelu_grad>{});
    case B::tanh_grad:
      return f(std::integral_constant<B, B::tanh_grad>{});
    case B::sigmoid_grad:
      return f(std::integral_constant<B, B::sigmoid_grad>{});
  }
  return f(std::integral_constant<B, B::add>{});
}

template <typename F>
decltype(auto) visit_compare(CompareOp op, F&& f) {
  using C = CompareOp;
  switch (op) {
    case C::eq:
      return f(std::integral_constant<C, C::eq>{});
    case C::ne:
      return f(std::integral_constant<C, C::ne>{});
    case C::lt:
      return f(std::integral_constant<C, C::lt>{});
    case C::le:
      return f(std::integral_constant<C, C::le>{});
    case C::gt:
      return f(std::integral_constant<C, C::gt>{});
    case C::ge:
      return f(std::integral_constant<C, C::ge>{});
  }
  return f(std::integral_constant<C, C::eq>{});
}

}  // namespace relpos
