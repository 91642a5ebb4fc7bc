// The backward engine: accumulation, shared subgraphs, retain_graph, NoGradGuard, anomaly mode,
// gradcheck itself (it must catch a wrong gradient), and release of saved tensors.
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/grad_ready.h"
#include "autograd/gradcheck.h"
#include "tests/harness.h"

using namespace relpos;

namespace {
Var leaf(const Shape& shape, uint64_t seed) {
  return Var(test::random_tensor(shape, DType::f64, seed), true);
}
}  // namespace

TEST_CASE("engine: a Var used twice accumulates both paths, and .grad accumulates over calls") {
  const Var x = leaf({3}, 1);
  const Var y = mul(x, x);  // dy/dx = 2x
  sum(add(y, x)).backward();
  const Tensor want = add_scalar(mul_scalar(x.value(), 2.0), 1.0);
  CHECK_CLOSE(x.grad(), want, 1e-12, 0);
  sum(x).backward();  // a second graph: grads add up
  CHECK_CLOSE(x.grad(), add_scalar(want, 1.0), 1e-12, 0);
  Var z = x;
  z.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("engine: diamond graph visits each node once, in topological order") {
  const Var x = leaf({4}, 2);
  const Var a = mul_scalar(x, 3.0);
  const Var b = mul(a, a);    // 9 x^2
  const Var c = add(a, b);    // 3x + 9x^2
  sum(mul(c, a)).backward();  // d/dx (3x + 9x^2) 3x = 18x + 81x^2 * 3 / 3 ... computed below
  const std::vector<double> xv = x.value().to_vector<double>(), gv = x.grad().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const double v = xv[i];  // f = 9x^2 + 27x^3, f' = 18x + 81x^2
    CHECK(gv[i] == doctest::Approx(18 * v + 81 * v * v).epsilon(1e-12));
  }
}

TEST_CASE("engine: backward frees the graph unless retain_graph, and says so") {
  const Var x = leaf({2, 3}, 3);
  const Var y = sum(mul(x, x));
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();  // second pass allowed, graph retained until now
  CHECK_CLOSE(x.grad(), mul_scalar(x.value(), 4.0), 1e-12, 0);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("retain_graph"), Error);
}

TEST_CASE("engine: saved tensors are released after backward unless the graph is retained") {
  Generator gen(5);
  Var x(randn({256, 256}, gen, 0, 1, DType::f64), true);
  const int64_t exp_bytes = 256 * 256 * 8;  // the output of exp, saved for mul's backward
  int64_t retained = 0, released = 0;
  {
    const Var y = sum(mul(exp(x), x));
    y.backward(Tensor(), /*retain_graph=*/true);
    retained = memory_stats(Device::cpu()).current_bytes;
  }
  x.zero_grad();
  {
    const Var y = sum(mul(exp(x), x));
    y.backward();
    released = memory_stats(Device::cpu()).current_bytes;
  }
  CHECK(retained - released == exp_bytes);
}

TEST_CASE("engine: NoGradGuard records nothing; backward on it is a clear error") {
  const Var x = leaf({3}, 4);
  Var y;
  {
    NoGradGuard guard;
    y = mul(x, x);
    CHECK_FALSE(grad_enabled());
  }
  CHECK(grad_enabled());
  CHECK_FALSE(y.requires_grad());
  CHECK(y.is_leaf());
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("does not require grad"), Error);
}

TEST_CASE("engine: a non-scalar output needs an explicit gradient of its shape") {
  const Var x = leaf({2, 2}, 6);
  const Var y = mul(x, x);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("[backward]"), Error);
  CHECK_THROWS_WITH_AS(y.backward(ones({3})), doctest::Contains("does not match"), Error);
  y.backward(ones({2, 2}, DType::f64));
  CHECK_CLOSE(x.grad(), mul_scalar(x.value(), 2.0), 1e-12, 0);
}

TEST_CASE("engine: anomaly mode names the function producing NaN/Inf, forward and backward") {
  set_detect_anomaly(true);
  const Var x(Tensor::from_vector<double>({-1.0, 4.0}, {2}), true);
  CHECK_THROWS_WITH_AS(log(x), doctest::Contains("log produced NaN/Inf in its forward"), Error);
  // sqrt(0) is finite but its gradient 1 / (2 sqrt(0)) is not.
  const Var z(Tensor::from_vector<double>({0.0, 4.0}, {2}), true);
  const Var s = sum(sqrt(z));
  CHECK_THROWS_WITH_AS(s.backward(), doctest::Contains("sqrt produced NaN/Inf in its backward"),
                       Error);
  set_detect_anomaly(false);
  CHECK_NOTHROW(log(x));  // off: NaN flows silently, as in torch
}

TEST_CASE("engine: leaves reject requires_grad on integer tensors") {
  CHECK_THROWS_WITH_AS(Var(zeros({2}, DType::i64), true), doctest::Contains("floating"), Error);
}

TEST_CASE("gradcheck: accepts a correct gradient and catches a wrong one") {
  auto square = [](const std::vector<Var>& in) { return mul(in[0], in[0]); };
  const Tensor x = test::random_tensor({3, 5}, DType::f64, 7);
  const GradcheckResult good = gradcheck(square, {x});
  CHECK_MESSAGE(good.ok, good.detail);
  // A function whose backward is off by a factor of 2.
  auto wrong = [](const std::vector<Var>& in) {
    const Tensor v = mul(in[0].value(), in[0].value());
    return make_result("wrong_square", v, {in[0]}, [x = in[0].value()](const Tensor& g) {
      return std::vector<Tensor>{mul(g, x)};
    });
  };
  const GradcheckResult bad = gradcheck(wrong, {x});
  CHECK_FALSE(bad.ok);
  CHECK(bad.detail.find("input 0") != std::string::npos);
  CHECK_THROWS_WITH_AS(gradcheck(square, {x.to(DType::f32)}), doctest::Contains("f64"), Error);
}

TEST_CASE("engine: the grad-ready hook reports each leaf once, when its gradient is complete") {
  // w feeds three products at different depths; b only the last; unused never gets a gradient.
  const Var w(test::random_tensor({3}, DType::f64, 1), true);
  const Var b(test::random_tensor({3}, DType::f64, 2), true);
  const Var unused(test::random_tensor({3}, DType::f64, 3), true);
  std::vector<std::pair<VarImpl*, Tensor>> reported;
  {
    const GradReadyScope scope(
        [&](VarImpl& leaf) { reported.emplace_back(&leaf, leaf.grad.clone()); });
    const Var h = w * w;           // two edges into w
    const Var y = sum(h * w + b);  // a third
    y.backward();
    (void)unused;
  }
  REQUIRE(reported.size() == 2);
  for (const auto& [leaf, grad_then] : reported) {
    const Var& v = leaf == w.impl() ? w : b;
    CHECK((leaf == w.impl() || leaf == b.impl()));
    CHECK_CLOSE(grad_then, v.grad(), 0, 0);  // nothing was added after the report
  }
  CHECK(reported[0].first != reported[1].first);
  CHECK_FALSE(unused.grad().defined());
  // Outside the scope nothing is reported.
  reported.clear();
  sum(w * b).backward();
  CHECK(reported.empty());
}
