// Gradchecks of the pointwise functions (autograd/functions/unary.cpp): contiguous inputs,
// transposed (non-contiguous) inputs and gradients, broadcast (stride-0) incoming gradients, and
// the forward value against the core op.
#include <cmath>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tests/autograd/grad_checks.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

using VarFn = std::function<Var(const Var&)>;
using TensorFn = std::function<Tensor(const Tensor&)>;

const Shape kShape{3, 5, 7};

// Moves every value at least `gap` away from 0 (for functions with a kink there).
Tensor away_from_zero(const Tensor& x, double gap = 0.1) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e += e >= 0 ? gap : -gap;
  return Tensor::from_vector(v, x.shape());
}

// gradcheck of f on x three ways: as is; on a transposed view of x with the output transposed
// back (non-contiguous input and incoming gradient); under a sum over dim 1 (the incoming
// gradient is an expanded, stride-0 view). Backward from strided and stride-0 gradients equals
// backward from their contiguous copies. Then the forward value against the core op, in f64
// and on a strided f32 input (bitwise: the Var function must call the same op).
void check_pointwise(const std::string& name, const VarFn& f, const TensorFn& core,
                     const Tensor& x64) {
  INFO(name);
  const auto plain = gradcheck([&](const std::vector<Var>& v) { return f(v[0]); }, {x64});
  CHECK_MESSAGE(plain.ok, plain.detail);
  const auto strided = gradcheck(
      [&](const std::vector<Var>& v) { return transpose(f(transpose(v[0], 0, 2)), 0, 2); }, {x64});
  CHECK_MESSAGE(strided.ok, strided.detail);
  const auto summed =
      gradcheck([&](const std::vector<Var>& v) { return sum(f(v[0]), {1}); }, {x64});
  CHECK_MESSAGE(summed.ok, summed.detail);
  test::check_noncontiguous_grad([&](const std::vector<Var>& v) { return f(v[0]); }, {x64});

  test::check_same(f(Var(x64)).value(), core(x64));
  const Tensor x32 = test::strided_copy(cast(x64, DType::f32));
  REQUIRE_FALSE(x32.is_contiguous());
  test::check_same(f(Var(x32)).value(), core(x32));
}

// The gradient of sum(f(x) * 1) at x, computed by backward.
Tensor grad_at(const VarFn& f, const Tensor& x) {
  Var v(x, true);
  sum(f(v)).backward();
  return v.grad();
}

}  // namespace

// Gradcheck tolerances are the defaults (atol 1e-6, rtol 1e-4, eps 1e-6): in f64 the central
// difference error is ~eps^2 |f'''| + 1e-16 |L| / eps, far below them for inputs of size ~1.

TEST_CASE("grad: smooth pointwise functions gradcheck on odd sizes, strided and broadcast grads") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 11, -2, 2);
  check_pointwise(
      "neg", [](const Var& v) { return neg(v); }, [](const Tensor& t) { return neg(t); }, x);
  check_pointwise(
      "exp", [](const Var& v) { return exp(v); }, [](const Tensor& t) { return exp(t); }, x);
  check_pointwise(
      "tanh", [](const Var& v) { return tanh(v); }, [](const Tensor& t) { return tanh(t); }, x);
  check_pointwise(
      "sin", [](const Var& v) { return sin(v); }, [](const Tensor& t) { return sin(t); }, x);
  check_pointwise(
      "cos", [](const Var& v) { return cos(v); }, [](const Tensor& t) { return cos(t); }, x);
  check_pointwise(
      "sigmoid", [](const Var& v) { return sigmoid(v); },
      [](const Tensor& t) { return sigmoid(t); }, x);
  check_pointwise(
      "gelu", [](const Var& v) { return gelu(v); }, [](const Tensor& t) { return gelu(t); }, x);
  check_pointwise(
      "add_scalar", [](const Var& v) { return add_scalar(v, -1.25); },
      [](const Tensor& t) { return add_scalar(t, -1.25); }, x);
  check_pointwise(
      "mul_scalar", [](const Var& v) { return mul_scalar(v, -2.5); },
      [](const Tensor& t) { return mul_scalar(t, -2.5); }, x);
}

TEST_CASE("grad: log, sqrt, rsqrt gradcheck on positive inputs, odd sizes") {
  // Drawn from [0.5, 2]: away from the pole / infinite slope at 0.
  const Tensor x = test::random_tensor(kShape, DType::f64, 12, 0.5, 2);
  check_pointwise(
      "log", [](const Var& v) { return log(v); }, [](const Tensor& t) { return log(t); }, x);
  check_pointwise(
      "sqrt", [](const Var& v) { return sqrt(v); }, [](const Tensor& t) { return sqrt(t); }, x);
  check_pointwise(
      "rsqrt", [](const Var& v) { return rsqrt(v); }, [](const Tensor& t) { return rsqrt(t); }, x);
}

TEST_CASE("grad: relu, elu, abs gradcheck with inputs kept 0.1 away from the kink at 0") {
  // |x| >= 0.1 >> eps, so no finite difference straddles the kink.
  const Tensor x = away_from_zero(test::random_tensor(kShape, DType::f64, 13, -1.5, 1.5));
  check_pointwise(
      "relu", [](const Var& v) { return relu(v); }, [](const Tensor& t) { return relu(t); }, x);
  check_pointwise(
      "abs", [](const Var& v) { return abs(v); }, [](const Tensor& t) { return abs(t); }, x);
  for (double alpha : {1.0, 0.3}) {
    check_pointwise(
        "elu alpha " + std::to_string(alpha), [alpha](const Var& v) { return elu(v, alpha); },
        [alpha](const Tensor& t) { return elu(t, alpha); }, x);
  }
}

TEST_CASE("grad: pow gradcheck for integer, fractional and negative exponents") {
  // Integer exponents on inputs of both signs; fractional ones only where x^p is real (x > 0).
  const Tensor mixed = test::random_tensor(kShape, DType::f64, 14, -1.5, 1.5);
  const Tensor positive = test::random_tensor(kShape, DType::f64, 15, 0.5, 2);
  for (double p : {1.0, 2.0, 3.0}) {
    check_pointwise(
        "pow " + std::to_string(p), [p](const Var& v) { return pow(v, p); },
        [p](const Tensor& t) { return pow(t, p); }, mixed);
  }
  for (double p : {0.5, -1.5, 2.7}) {
    check_pointwise(
        "pow " + std::to_string(p), [p](const Var& v) { return pow(v, p); },
        [p](const Tensor& t) { return pow(t, p); }, positive);
  }
}

TEST_CASE("grad: abs has gradient sign(x), 0 at 0; pow with exponent 0 has gradient 0, even at 0") {
  const Tensor x = Tensor::from_vector<double>({-1.5, 0.0, 2.0, -0.0, 3.0}, {5});
  CHECK(grad_at([](const Var& v) { return abs(v); }, x).to_vector<double>() ==
        std::vector<double>{-1, 0, 1, 0, 1});
  // x^0 = 1 is constant; a naive 0 * x^(-1) would give NaN at x = 0.
  CHECK(grad_at([](const Var& v) { return pow(v, 0.0); }, x).to_vector<double>() ==
        std::vector<double>(5, 0.0));
  // d x^2 / dx = 2x exactly at these values.
  CHECK(grad_at([](const Var& v) { return pow(v, 2.0); }, x).to_vector<double>() ==
        std::vector<double>{-3, 0, 4, 0, 6});
}

TEST_CASE("grad: pointwise backward in f32 matches the f64 gradient") {
  // The fused backward ops run in the input's dtype; f32 agrees with f64 to f32 rounding
  // (rtol 1e-5: a few ulps of the products involved).
  const Tensor x64 = away_from_zero(test::random_tensor({4, 9}, DType::f64, 16, -2, 2));
  const Tensor x32 = cast(x64, DType::f32);
  const std::vector<std::pair<const char*, VarFn>> fns = {
      {"exp", [](const Var& v) { return exp(v); }},
      {"tanh", [](const Var& v) { return tanh(v); }},
      {"sin", [](const Var& v) { return sin(v); }},
      {"cos", [](const Var& v) { return cos(v); }},
      {"sigmoid", [](const Var& v) { return sigmoid(v); }},
      {"relu", [](const Var& v) { return relu(v); }},
      {"elu", [](const Var& v) { return elu(v, 0.7); }},
      {"gelu", [](const Var& v) { return gelu(v); }},
      {"abs", [](const Var& v) { return abs(v); }},
      {"pow", [](const Var& v) { return pow(abs(v), 1.5); }},
  };
  for (const auto& [name, f] : fns) {
    RELPOS_INFO("{}", name);
    const Tensor g32 = grad_at(f, x32);
    CHECK(g32.dtype() == DType::f32);
    CHECK_CLOSE(g32, cast(grad_at(f, x64), DType::f32), 1e-5, 1e-6);
  }
}
