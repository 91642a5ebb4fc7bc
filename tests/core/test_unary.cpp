// Elementwise unary ops against their std:: formulas on doubles: f32 and f64, odd and strided
// inputs, the parallel path, integer dtypes, saturation and errors.
#include <cmath>
#include <functional>
#include <limits>

#include "tests/harness.h"

using namespace relpos;

namespace {

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double low, high;  // input range inside the op's domain
};

double normal_cdf(double v) {
  return 0.5 * std::erfc(-v / std::sqrt(2.0));  // no cancellation for v << 0
}

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double v) { return -v; }, -3, 3},
      {"exp", [](const Tensor& x) { return relpos::exp(x); }, [](double v) { return std::exp(v); },
       -5, 5},
      {"log", [](const Tensor& x) { return relpos::log(x); }, [](double v) { return std::log(v); },
       0.05, 5},
      {"sqrt", [](const Tensor& x) { return relpos::sqrt(x); },
       [](double v) { return std::sqrt(v); }, 0, 5},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); },
       0.05, 5},
      {"tanh", [](const Tensor& x) { return relpos::tanh(x); },
       [](double v) { return std::tanh(v); }, -4, 4},
      {"sin", [](const Tensor& x) { return relpos::sin(x); }, [](double v) { return std::sin(v); },
       -7, 7},
      {"cos", [](const Tensor& x) { return relpos::cos(x); }, [](double v) { return std::cos(v); },
       -7, 7},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](double v) { return 1 / (1 + std::exp(-v)); }, -8, 8},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }, -2,
       2},
      {"elu", [](const Tensor& x) { return elu(x, 0.7); },
       [](double v) { return v > 0 ? v : 0.7 * (std::exp(v) - 1); }, -3, 3},
      {"gelu", [](const Tensor& x) { return gelu(x); }, [](double v) { return v * normal_cdf(v); },
       -4, 4},
      {"abs", [](const Tensor& x) { return relpos::abs(x); }, [](double v) { return std::fabs(v); },
       -3, 3},
      {"pow", [](const Tensor& x) { return relpos::pow(x, 2.5); },
       [](double v) { return std::pow(v, 2.5); }, 0.1, 3},
      {"pow_int_exponent", [](const Tensor& x) { return relpos::pow(x, 3); },
       [](double v) { return v * v * v; }, -2, 2},
      {"add_scalar", [](const Tensor& x) { return add_scalar(x, 0.25); },
       [](double v) { return v + 0.25; }, -3, 3},
      {"mul_scalar", [](const Tensor& x) { return mul_scalar(x, -1.5); },
       [](double v) { return v * -1.5; }, -3, 3},
  };
}

}  // namespace

TEST_CASE("unary: every op matches its std:: formula, f32 and f64, odd, large and strided inputs") {
  for (const UnaryCase& c : unary_cases())
    for (DType dt : {DType::f32, DType::f64})
      for (const Shape& shape : {Shape{3, 5, 7}, Shape{257, 131}}) {  // the second runs threaded
        INFO(c.name << " " << dtype_name(dt) << " " << shape_str(shape));
        const Tensor x = test::random_tensor(shape, dt, 11, c.low, c.high);
        std::vector<double> want;
        for (double v : x.to_vector<double>()) want.push_back(c.ref(v));
        const Tensor expected = Tensor::from_vector(want, shape);
        // f32: one rounding plus libm's float functions (a few ulp of 6e-8), so 1e-5 relative has
        // headroom yet catches any formula error; f64: a few ulp of 1.1e-16.
        const double rtol = dt == DType::f32 ? 1e-5 : 1e-12, atol = dt == DType::f32 ? 1e-6 : 1e-14;
        for (const Tensor& in : {x, test::strided_copy(x)}) {
          const Tensor y = c.op(in);
          CHECK(y.dtype() == dt);
          CHECK(y.is_contiguous());
          CHECK_CLOSE(y, expected, rtol, atol);
        }
      }
}

TEST_CASE("unary: f32 gelu keeps its relative accuracy far into the negative tail") {
  // The CPU computes the normal CDF with its own erfc polynomial; GELU(-9) is about -1e-18, so an
  // absolute tolerance would pass anything there. Rounding |x|/sqrt2 to f32 alone moves the exact
  // value by up to ~5e-6 relative at |x| = 9 (x^2 times 6e-8); the polynomial adds under 5e-7.
  const Tensor x = test::random_tensor({100003}, DType::f32, 13, -9, 9);
  std::vector<double> want;
  for (double v : x.to_vector<double>()) want.push_back(v * normal_cdf(v));
  CHECK_CLOSE(gelu(x), Tensor::from_vector(want, {100003}), 1e-5, 0);
  const std::vector<double> ends =
      gelu(Tensor::from_vector<float>({-INFINITY, -200.f, -0.f, 0.f, 200.f, INFINITY, NAN}, {7}))
          .to_vector<double>();
  CHECK(std::isnan(ends[0]));  // -inf * Phi(-inf) = -inf * 0, as the f64 formula and libm give
  CHECK(ends[1] == 0);
  CHECK(ends[2] == 0);
  CHECK(ends[3] == 0);
  CHECK(ends[4] == 200);
  CHECK(ends[5] == INFINITY);
  CHECK(std::isnan(ends[6]));
}

TEST_CASE("unary: NaN goes through every activation, as in PyTorch") {
  // A NaN that an activation turned into a number would hide a diverged model's values (relu
  // once made them 0: plausible logits from NaN features).
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    const Tensor x = cast(Tensor::from_vector<double>({NAN, -1, 1}, {3}), dt);
    for (const auto& activation :
         std::vector<std::pair<const char*, Tensor>>{{"relu", relu(x)},
                                                     {"elu", elu(x, 1.0)},
                                                     {"gelu", gelu(x)},
                                                     {"tanh", relpos::tanh(x)},
                                                     {"sigmoid", sigmoid(x)},
                                                     {"abs", relpos::abs(x)}}) {
      INFO(activation.first);
      const std::vector<double> v = activation.second.to_vector<double>();
      CHECK(std::isnan(v[0]));
      CHECK_FALSE(std::isnan(v[1]));
      CHECK_FALSE(std::isnan(v[2]));
    }
  }
}

TEST_CASE("unary: sigmoid saturates at +-50 and +-100 without overflow or NaN") {
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    const Tensor x = cast(Tensor::from_vector<double>({-100, -50, -20, 0, 20, 50, 100}, {7}), dt);
    const std::vector<double> y = sigmoid(x).to_vector<double>();
    for (double v : y) CHECK(std::isfinite(v));
    // -100 in f32 is a denormal (about 3.7e-44): only its sign and size are checked.
    CHECK(y[0] >= 0);
    CHECK(y[0] < 1e-40);
    const std::vector<double> xs = x.to_vector<double>();
    for (size_t i = 1; i < xs.size(); ++i) {
      INFO("x = " << xs[i]);
      const double want = 1 / (1 + std::exp(-xs[i]));
      CHECK(std::abs(y[i] - want) <= 1e-6 * want);  // relative: sigmoid(-50) is 1.9e-22
    }
  }
}

TEST_CASE("unary: exp, log, sqrt of special values follow IEEE") {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = Tensor::from_vector<float>({0.f, -1.f, float(inf), float(-inf)}, {4});
  const std::vector<double> lg = relpos::log(x).to_vector<double>();
  CHECK(lg[0] == -inf);
  CHECK(std::isnan(lg[1]));
  CHECK(lg[2] == inf);
  const std::vector<double> ex = relpos::exp(x).to_vector<double>();
  CHECK(ex[2] == inf);
  CHECK(ex[3] == 0);
  CHECK(std::isnan(relpos::sqrt(x).to_vector<double>()[1]));
  // f32 exp over its whole normal range (the CPU uses its own vectorized polynomial): 2 ulp.
  const Tensor wide = test::random_tensor({100001}, DType::f32, 12, -87, 88);
  std::vector<double> want;
  for (double v : wide.to_vector<double>()) want.push_back(std::exp(v));
  CHECK_CLOSE(relpos::exp(wide), Tensor::from_vector(want, {100001}), 2.5e-7, 0);
  CHECK(relpos::exp(Tensor::scalar(1.0, DType::f64)).item() == doctest::Approx(std::exp(1.0)));
  CHECK(relpos::exp(zeros({0, 3})).shape() == Shape{0, 3});
}

TEST_CASE("unary: neg, abs, add_scalar, mul_scalar are exact on integers and keep the dtype") {
  const std::vector<int64_t> v = {-7, 0, 3, -1, 12, 5, 2000000000, -9};
  for (DType dt : {DType::i32, DType::i64}) {
    INFO(dtype_name(dt));
    const Tensor x = cast(Tensor::from_vector(v, {2, 4}), dt);
    std::vector<int64_t> want_neg, want_abs, want_add, want_mul;
    for (int64_t e : v) {
      want_neg.push_back(-e);
      want_abs.push_back(e < 0 ? -e : e);
      want_add.push_back(e + 4);
      want_mul.push_back(e * -3);
    }
    for (const Tensor& in : {x, test::strided_copy(x)}) {
      CHECK(neg(in).dtype() == dt);
      CHECK(neg(in).to_vector<int64_t>() == want_neg);
      CHECK(relpos::abs(in).to_vector<int64_t>() == want_abs);
      CHECK(add_scalar(in, 4).to_vector<int64_t>() == want_add);
      if (dt == DType::i64) CHECK(mul_scalar(in, -3).to_vector<int64_t>() == want_mul);
    }
  }
  const Tensor mask = Tensor::from_vector<uint8_t>({0, 1, 1}, {3});
  CHECK(mul_scalar(mask, 7).to_vector<int64_t>() == std::vector<int64_t>{0, 7, 7});
}

TEST_CASE("unary: errors name the op (integer inputs, non-integer scalars, undefined tensors)") {
  const Tensor xi = Tensor::from_vector<int64_t>({1, 2}, {2});
  CHECK_THROWS_WITH_AS(relpos::exp(xi), doctest::Contains("[exp] expects a floating dtype"), Error);
  CHECK_THROWS_WITH_AS(sigmoid(xi), doctest::Contains("[sigmoid]"), Error);
  CHECK_THROWS_WITH_AS(relpos::pow(xi, 2), doctest::Contains("[pow]"), Error);
  CHECK_THROWS_WITH_AS(add_scalar(xi, 2.5), doctest::Contains("[add_scalar] scalar 2.5"), Error);
  CHECK_THROWS_WITH_AS(mul_scalar(cast(xi, DType::i32), 1e10), doctest::Contains("[mul_scalar]"),
                       Error);
  CHECK_THROWS_WITH_AS(add_scalar(cast(xi, DType::u8), -1), doctest::Contains("[add_scalar]"),
                       Error);
  CHECK_THROWS_WITH_AS(relu(Tensor()), doctest::Contains("[relu]"), Error);
}

TEST_CASE("unary: CUDA matches CPU for every op") {
  for (const UnaryCase& c : unary_cases()) {
    const Tensor x = test::random_tensor({7, 33}, DType::f32, 5, c.low, c.high);
    test::check_cuda_matches_cpu(
        c.name, [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{c.op(in[0])}; },
        {x});
  }
}

TEST_CASE("unary: f32 elu and its gradient keep their relative accuracy near 0 and for large -x") {
  // The CPU computes f32 elu as exp - 1 from |x| >= 1/4 and by a polynomial below; on both sides
  // of that switch the result stays within a few ulp (1e-6 relative) of expm1 in f64.
  std::vector<double> xs;
  for (double m : {1e-30, 1e-7, 1e-3, 0.2, 0.2499, 0.25, 0.2501, 0.5, 3.0, 20.0, 100.0})
    xs.push_back(-m);
  xs.push_back(0.75);
  const Tensor x =
      cast(Tensor::from_vector<double>(xs, {static_cast<int64_t>(xs.size())}), DType::f32);
  const std::vector<double> xf = x.to_vector<double>();  // the f32-rounded inputs
  const std::vector<double> y = elu(x, 0.7).to_vector<double>();
  const std::vector<double> g = elu_backward(x, full_like(x, 2.0), 0.7).to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("x = " << xf[i]);
    const double want = xf[i] > 0 ? xf[i] : 0.7 * std::expm1(xf[i]);
    const double want_grad = xf[i] > 0 ? 2.0 : 2.0 * 0.7 * std::exp(xf[i]);
    CHECK(std::abs(y[i] - want) <= 1e-6 * std::abs(want) + 1e-37);
    CHECK(std::abs(g[i] - want_grad) <= 1e-6 * want_grad + 1e-37);
  }
}
