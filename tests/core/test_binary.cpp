// Broadcasting binary ops and the fused activation gradients against plain-loop references:
// f32 and f64, odd, broadcast and strided inputs, NaN propagation, integer paths and errors.
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>

#include "tests/core/naive.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  bool integers;  // also defined on integer dtypes
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [](double a, double b) { return a + b; }, true},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
       [](double a, double b) { return a - b; }, true},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
       [](double a, double b) { return a * b; }, true},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); },
       [](double a, double b) { return a / b; }, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return a > b ? a : b; }, true},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return a < b ? a : b; }, true},
  };
}

// Shapes of (a, b): broadcast both ways, a 0-dim operand, equal shapes, and threaded ones: many
// short rows over 4 dims (the row odometer), and rows longer than a task's 8192 elements, where
// a thread's first task starts inside a row.
const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{5, 1, 3}, {4, 1}},    {{7}, {2, 3, 7}},    {{}, {4, 3}},
    {{3, 5, 7}, {3, 5, 7}}, {{300, 129}, {129}}, {{40, 7, 30, 5}, {7, 1, 5}},
    {{3, 17000}, {3, 1}}};

std::vector<double> naive_binary(const BinaryCase& c, const Tensor& a, const Tensor& b,
                                 const Shape& shape) {
  const std::vector<double> va = test::broadcast_values(a, shape),
                            vb = test::broadcast_values(b, shape);
  std::vector<double> out;
  for (size_t i = 0; i < va.size(); ++i) out.push_back(c.ref(va[i], vb[i]));
  return out;
}

}  // namespace

TEST_CASE("binary: add/sub/mul/div/maximum/minimum match the naive formula with broadcasting") {
  for (const BinaryCase& c : binary_cases())
    for (DType dt : {DType::f32, DType::f64})
      for (const auto& [sa, sb] : kShapePairs) {
        RELPOS_INFO("{} {} {} {}", c.name, dtype_name(dt), shape_str(sa), shape_str(sb));
        const Tensor a = test::random_tensor(sa, dt, 21, -2, 2);
        const Tensor b = test::random_tensor(sb, dt, 22, -2, 2);
        const Shape shape = broadcast_shapes(sa, sb, "test");
        const Tensor want = Tensor::from_vector(naive_binary(c, a, b, shape), shape);
        // One correctly rounded operation on exact inputs: within one f32 / f64 rounding.
        const double rtol = dt == DType::f32 ? 1e-6 : 1e-14, atol = dt == DType::f32 ? 1e-7 : 1e-15;
        CHECK_CLOSE(c.op(a, b), want, rtol, atol);
        CHECK_CLOSE(c.op(test::strided_copy(a), test::strided_copy(b)), want, rtol, atol);
        CHECK(c.op(a, b).dtype() == dt);
      }
}

TEST_CASE("binary: heads split from [B, L, H*D] (short strided rows) match the naive formula") {
  // Each run is one head's D elements; the next run is one pointer step along L, carried into H
  // and B at L's end (core/cpu/strided_loop.h). [3, 2, 1100, 8] passes the 32768 elements from
  // which threads share the runs, so a thread starts inside the odometer; the kinds of run are
  // strided, one broadcast input, and dense.
  const std::vector<std::array<int64_t, 4>> kHeads = {
      {2, 5, 3, 7}, {3, 1100, 2, 8}, {4, 50, 4, 16}, {1, 3, 2, 63}};
  for (const BinaryCase& c : binary_cases())
    for (DType dt : {DType::f32, DType::f64})
      for (const std::array<int64_t, 4>& sizes : kHeads) {                     // B, L, H, D
        const int64_t b = sizes[0], l = sizes[1], h = sizes[2], d = sizes[3];  // for the lambda
        RELPOS_INFO("{} {} B {} L {} H {} D {}", c.name, dtype_name(dt), b, l, h, d);
        const auto heads = [&](uint64_t seed) {  // [B, H, L, D], a view of [B, L, H*D]
          return test::random_tensor({b, l, h * d}, dt, seed, -2, 2)
              .reshape({b, l, h, d})
              .transpose(1, 2);
        };
        const Tensor x = heads(41), y = heads(42);
        const Tensor per_row = test::random_tensor({b, h, l, 1}, dt, 43, -2, 2);
        const Tensor per_column = test::random_tensor({d}, dt, 44, -2, 2);
        const Shape shape = {b, h, l, d};
        const double rtol = dt == DType::f32 ? 1e-6 : 1e-14, atol = dt == DType::f32 ? 1e-7 : 1e-15;
        for (const auto& [p, q] : std::vector<std::pair<Tensor, Tensor>>{
                 {x, y}, {x, per_row}, {per_row, x}, {x, per_column}, {x, x.contiguous()}}) {
          const Tensor want = Tensor::from_vector(naive_binary(c, p, q, shape), shape);
          const Tensor got = c.op(p, q);
          CHECK_CLOSE(got, want, rtol, atol);
          // One correctly rounded operation: the bits of the same op on contiguous operands.
          CHECK(test::same_bits(got, c.op(p.contiguous(), q.contiguous())));
        }
      }
}

TEST_CASE("copy and where: short strided rows, into a strided destination too") {
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x =
        test::random_tensor({3, 1100, 16}, dt, 51).reshape({3, 1100, 2, 8}).transpose(1, 2);
    const Tensor dense = x.contiguous();  // [3, 2, 1100, 8]
    CHECK(dense.is_contiguous());
    CHECK(test::same_bits(dense, cast(Tensor::from_vector(x.to_vector<double>(), x.shape()), dt)));
    // A strided destination: the transposed view of a [3, 1100, 2, 8] buffer.
    const Tensor target = Tensor::empty({3, 1100, 2, 8}, dt);
    copy_(target.transpose(1, 2), dense);
    CHECK(test::same_bits(target.transpose(1, 2).contiguous(), dense));
    const Tensor cond = test::random_indices({3, 1, 1100, 1}, 2, 52).to(DType::u8);
    const Tensor y = test::random_tensor({3, 2, 1100, 8}, dt, 53);
    CHECK(test::same_bits(where(cond, x, y), where(cond, dense, y)));
  }
}

TEST_CASE("binary: maximum and minimum propagate NaN from either side") {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor a = cast(Tensor::from_vector<double>({nan, 1, nan, -inf, 2}, {5}), dt);
    const Tensor b = cast(Tensor::from_vector<double>({1, nan, nan, 3, 2}, {5}), dt);
    const std::vector<double> mx = maximum(a, b).to_vector<double>(),
                              mn = minimum(a, b).to_vector<double>();
    for (int i = 0; i < 3; ++i) {
      CHECK(std::isnan(mx[i]));
      CHECK(std::isnan(mn[i]));
    }
    CHECK(mx[3] == 3);
    CHECK(mn[3] == -inf);
    CHECK(mx[4] == 2);
  }
}

TEST_CASE("binary: integer add/sub/mul/maximum/minimum are exact; div rejects integers") {
  for (DType dt : {DType::i32, DType::i64}) {
    const Tensor a = add_scalar(test::random_indices({5, 1, 3}, 100, 31, dt), -50);
    const Tensor b = add_scalar(test::random_indices({4, 1}, 100, 32, dt), -50);
    for (const BinaryCase& c : binary_cases()) {
      INFO(c.name << " " << dtype_name(dt));
      if (!c.integers) {
        CHECK_THROWS_WITH_AS(c.op(a, b), doctest::Contains("expects a floating dtype"), Error);
        continue;
      }
      std::vector<int64_t> want;
      for (double v : naive_binary(c, a, b, {5, 4, 3})) want.push_back(static_cast<int64_t>(v));
      CHECK(c.op(a, b).dtype() == dt);
      CHECK(c.op(test::strided_copy(a), b).to_vector<int64_t>() == want);
    }
  }
}

namespace {

struct GradCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> backward;  // (x, grad)
  std::function<double(double)> derivative;                      // f'(x), written in x
  std::function<Tensor(const Tensor&)> forward;                  // f, for finite differences
  bool from_output;  // backward takes y = f(x) instead of x
};

double normal_cdf(double v) {
  return 0.5 * std::erfc(-v / std::sqrt(2.0));  // no cancellation for v << 0
}

std::vector<GradCase> grad_cases() {
  const double pi = std::acos(-1.0);
  return {
      {"relu_backward", [](const Tensor& x, const Tensor& g) { return relu_backward(x, g); },
       [](double x) { return x > 0 ? 1.0 : 0.0; }, [](const Tensor& x) { return relu(x); }, false},
      {"elu_backward", [](const Tensor& x, const Tensor& g) { return elu_backward(x, g, 0.7); },
       [](double x) { return x > 0 ? 1.0 : 0.7 * std::exp(x); },
       [](const Tensor& x) { return elu(x, 0.7); }, false},
      {"gelu_backward", [](const Tensor& x, const Tensor& g) { return gelu_backward(x, g); },
       [pi](double x) { return normal_cdf(x) + x * std::exp(-x * x / 2) / std::sqrt(2 * pi); },
       [](const Tensor& x) { return gelu(x); }, false},
      {"tanh_backward", [](const Tensor& y, const Tensor& g) { return tanh_backward(y, g); },
       [](double x) { return 1 - std::tanh(x) * std::tanh(x); },
       [](const Tensor& x) { return relpos::tanh(x); }, true},
      {"sigmoid_backward", [](const Tensor& y, const Tensor& g) { return sigmoid_backward(y, g); },
       [](double x) { return std::exp(-x) / ((1 + std::exp(-x)) * (1 + std::exp(-x))); },
       [](const Tensor& x) { return sigmoid(x); }, true},
  };
}

}  // namespace

TEST_CASE("binary: fused activation gradients equal grad * f'(x) and the central difference") {
  for (const GradCase& c : grad_cases()) {
    for (DType dt : {DType::f32, DType::f64}) {
      INFO(c.name << " " << dtype_name(dt));
      const Tensor x = test::random_tensor({3, 5, 7}, dt, 41, -3, 3);
      const Tensor g = test::random_tensor({3, 5, 7}, dt, 42, -1, 1);
      const Tensor in = c.from_output ? c.forward(x) : x;
      std::vector<double> want;
      const std::vector<double> xs = x.to_vector<double>(), gs = g.to_vector<double>();
      for (size_t i = 0; i < xs.size(); ++i) want.push_back(gs[i] * c.derivative(xs[i]));
      const Tensor expected = Tensor::from_vector(want, x.shape());
      // f32: y = f(x) is rounded before tanh/sigmoid derivatives use it (relative 1e-7 on y, a
      // few 1e-7 absolute on 1 - y^2), so 1e-5; f64: a few ulp through exp/erf.
      const double rtol = dt == DType::f32 ? 1e-5 : 1e-11, atol = dt == DType::f32 ? 1e-6 : 1e-13;
      CHECK_CLOSE(c.backward(in, g), expected, rtol, atol);
      CHECK_CLOSE(c.backward(test::strided_copy(in), test::strided_copy(g)), expected, rtol, atol);
    }
    // Central difference of the forward op in f64, h = 1e-6: truncation ~1e-12, rounding ~1e-10,
    // so 1e-7 absolute. No sampled x lies within h of relu's and elu's kink at 0.
    const Tensor x = test::random_tensor({4, 9}, DType::f64, 43, -3, 3);
    const double h = 1e-6;
    const Tensor fd =
        mul_scalar(sub(c.forward(add_scalar(x, h)), c.forward(add_scalar(x, -h))), 1 / (2 * h));
    const Tensor in = c.from_output ? c.forward(x) : x;
    CHECK_CLOSE(c.backward(in, ones({4, 9}, DType::f64)), fd, 0, 1e-7);
  }
}

TEST_CASE("binary: f32 gelu_backward keeps its relative accuracy far into the negative tail") {
  // The CPU's vectorized normal CDF and exp against the f64 formula. Relative 1e-5 over [-9, 9],
  // with 1e-7 absolute where Phi(x) + x phi(x) crosses 0 (x = -0.75); on [-9, -2] relative
  // only: rounding x/sqrt2 and x^2/2 to f32 alone moves the exact value by ~5e-6 at |x| = 9.
  const double pi = std::acos(-1.0);
  for (auto [low, high, rtol, atol] :
       {std::tuple{-9.0, 9.0, 1e-5, 1e-7}, {-9.0, -2.0, 2e-5, 0.0}}) {
    RELPOS_INFO("x in [{}, {}]", low, high);
    const Tensor x = test::random_tensor({100003}, DType::f32, 44, low, high);
    std::vector<double> want;
    for (double v : x.to_vector<double>())
      want.push_back(normal_cdf(v) + v * std::exp(-v * v / 2) / std::sqrt(2 * pi));
    CHECK_CLOSE(gelu_backward(x, ones({100003})), Tensor::from_vector(want, {100003}), rtol, atol);
  }
}

TEST_CASE("binary: errors name the op and both shapes, dtypes or devices") {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("[add] shapes [2, 3] and [4] do not broadcast"),
                       Error);
  CHECK_THROWS_WITH_AS(maximum(a, zeros({2, 3}, DType::f64)),
                       doctest::Contains("[maximum] dtypes differ: f32[2, 3] cpu and f64[2, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(relu_backward(a, zeros({3})),
                       doctest::Contains("[relu_backward] x is f32[2, 3] cpu but grad is f32[3]"),
                       Error);
  CHECK_THROWS_WITH_AS(gelu_backward(zeros({2}, DType::i64), zeros({2}, DType::i64)),
                       doctest::Contains("[gelu_backward] expects a floating dtype"), Error);
  CHECK_THROWS_WITH_AS(sub(a, Tensor()), doctest::Contains("[sub]"), Error);
  if (cuda_available()) {
    CHECK_THROWS_WITH_AS(mul(a, zeros({2, 3}, DType::f32, Device::cuda(0))),
                         doctest::Contains("[mul] tensors are on different devices"), Error);
  } else {
    MESSAGE("SKIPPED (no CUDA device): the device-mismatch error of binary ops");
  }
}

TEST_CASE("binary: CUDA matches CPU for every op") {
  const Tensor a = test::random_tensor({5, 1, 3}, DType::f32, 51, -2, 2);
  const Tensor b = test::random_tensor({4, 1}, DType::f32, 52, -2, 2);
  for (const BinaryCase& c : binary_cases())
    test::check_cuda_matches_cpu(
        c.name,
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{c.op(in[0], in[1])}; },
        {a, b});
  const Tensor x = test::random_tensor({6, 17}, DType::f32, 53, -3, 3);
  const Tensor g = test::random_tensor({6, 17}, DType::f32, 54, -1, 1);
  for (const GradCase& c : grad_cases())
    test::check_cuda_matches_cpu(c.name,
                                 [&](const std::vector<Tensor>& in) {
                                   return std::vector<Tensor>{c.backward(in[0], in[1])};
                                 },
                                 {x, g});
}
