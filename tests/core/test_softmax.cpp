// softmax / log_softmax and their backward against plain f64 loops: every dim of strided inputs,
// the column-block and threaded paths, extreme logits, central differences, errors; and the
// vectorizable exp / max helpers of core/cpu/vec_math.h that the fused kernels use.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/cpu/vec_math.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

struct Split {
  int64_t outer = 1, D = 1, inner = 1;
};
Split split(const Shape& s, int dim) {
  Split p;
  for (int d = 0; d < static_cast<int>(s.size()); ++d) {
    if (d < dim)
      p.outer *= s[d];
    else if (d == dim)
      p.D = s[d];
    else
      p.inner *= s[d];
  }
  return p;
}

// softmax (or log_softmax) of x (values of a tensor shaped `s`) along dim, in f64.
std::vector<double> naive_softmax(const std::vector<double>& x, const Shape& s, int dim, bool log) {
  const Split p = split(s, dim);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t j = 0; j < p.inner; ++j) {
      auto at = [&](int64_t d) { return static_cast<size_t>((o * p.D + d) * p.inner + j); };
      double m = -kInf, sum = 0;
      for (int64_t d = 0; d < p.D; ++d) m = std::max(m, x[at(d)]);
      for (int64_t d = 0; d < p.D; ++d) sum += std::exp(x[at(d)] - m);
      for (int64_t d = 0; d < p.D; ++d)
        y[at(d)] = log ? x[at(d)] - m - std::log(sum) : std::exp(x[at(d)] - m) / sum;
    }
  return y;
}

// The analytic backward from y and gy: y (gy - sum(gy y)), or gy - exp(y) sum(gy) for log.
std::vector<double> naive_backward(const std::vector<double>& y, const std::vector<double>& gy,
                                   const Shape& s, int dim, bool log) {
  const Split p = split(s, dim);
  std::vector<double> gx(y.size());
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t j = 0; j < p.inner; ++j) {
      auto at = [&](int64_t d) { return static_cast<size_t>((o * p.D + d) * p.inner + j); };
      double acc = 0;
      for (int64_t d = 0; d < p.D; ++d) acc += log ? gy[at(d)] : gy[at(d)] * y[at(d)];
      for (int64_t d = 0; d < p.D; ++d)
        gx[at(d)] = log ? gy[at(d)] - std::exp(y[at(d)]) * acc : y[at(d)] * (gy[at(d)] - acc);
    }
  return gx;
}

Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector(v, s);
}

// Tolerances: f32 exp is within 2 ulp and the row sums add up to ~41 f32 terms, so 1e-5
// relative; log_softmax values reach ~10 in size, so 1e-5 absolute. f64 uses std::exp.
struct Tol {
  double rtol, atol;
};
Tol tol(DType dt, bool log) {
  if (dt == DType::f64) return {1e-12, 1e-13};
  return {1e-5, log ? 1e-5 : 1e-7};
}

// Forward of x (made strided) along every dim, against the naive formula.
void check_forward(const Tensor& x, bool log) {
  const Tensor xs = test::strided_copy(x);
  for (int dim = 0; dim < x.dim(); ++dim) {
    INFO("dim " << dim << " of " << x.str() << (log ? " log_softmax" : " softmax"));
    const Tensor y = log ? log_softmax(xs, dim) : softmax(xs, dim);
    const Tensor y_neg = log ? log_softmax(xs, dim - x.dim()) : softmax(xs, dim - x.dim());
    const Tol t = tol(x.dtype(), log);
    CHECK(y.dtype() == x.dtype());
    CHECK_CLOSE(y, f64(naive_softmax(x.to_vector<double>(), x.shape(), dim, log), x.shape()),
                t.rtol, t.atol);
    CHECK(y_neg.to_vector<double>() == y.to_vector<double>());
  }
}

}  // namespace

TEST_CASE(
    "softmax: rows sum to 1 and match the naive formula along every dim, odd sizes, strided") {
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x = test::random_tensor({5, 7, 9}, dt, 11, -4, 4);
    check_forward(x, false);
    // Sum along dim 1 of softmax(x, 1) is 1 in every (outer, inner) position.
    const std::vector<double> y = softmax(test::strided_copy(x), 1).to_vector<double>();
    for (int64_t o = 0; o < 5; ++o)
      for (int64_t j = 0; j < 9; ++j) {
        double s = 0;
        for (int64_t d = 0; d < 7; ++d) s += y[(o * 7 + d) * 9 + j];
        CHECK(std::abs(s - 1) < (dt == DType::f32 ? 1e-6 : 1e-14));
      }
  }
}

TEST_CASE("log_softmax: matches the naive formula along every dim, odd sizes, strided, f32/f64") {
  for (DType dt : {DType::f32, DType::f64})
    check_forward(test::random_tensor({5, 7, 9}, dt, 12, -4, 4), true);
}

TEST_CASE(
    "softmax: column blocks wider than one block and the threaded path match the naive formula") {
  // [3, 5, 131] along dim 1: 131 columns = blocks of 64, 64 and 3. [37, 41, 29] has > 32768
  // elements, so the OpenMP loop runs.
  for (bool log : {false, true}) {
    check_forward(test::random_tensor({3, 5, 131}, DType::f32, 13, -5, 5), log);
    check_forward(test::random_tensor({37, 41, 29}, DType::f32, 14, -5, 5), log);
  }
}

TEST_CASE(
    "softmax: logits of +-1000 stay finite; -inf gets probability 0; an all -inf row is NaN") {
  // The last row is all large and negative: only the max shift keeps exp(x - max) in range.
  const std::vector<float> v = {1000, -1000, 0, 999.5f, -1000, 1000,  -1000,   -999,
                                0.5f, 0,     0, 0,      -1000, -1001, -999.5f, -1200};
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x = cast(Tensor::from_vector(v, {4, 4}), dt);
    const Tensor y = softmax(x, 1), ly = log_softmax(x, 1);
    CHECK(all_finite(y));
    CHECK(all_finite(ly));
    const std::vector<double> xv = x.to_vector<double>();
    CHECK_CLOSE(y, f64(naive_softmax(xv, {4, 4}, 1, false), {4, 4}), 1e-6, 1e-30);
    CHECK_CLOSE(ly, f64(naive_softmax(xv, {4, 4}, 1, true), {4, 4}), 1e-6, 1e-6);
    CHECK_CLOSE(softmax(x, 0), f64(naive_softmax(xv, {4, 4}, 0, false), {4, 4}), 1e-6, 1e-30);
  }
  // A masked (-inf) logit gets exactly 0 probability and -inf log-probability. A row with every
  // logit -inf has no defined distribution: NaN, like torch.softmax.
  const Tensor m =
      Tensor::from_vector<float>({1, -INFINITY, 2, -INFINITY, -INFINITY, -INFINITY}, {2, 3});
  const std::vector<float> y = softmax(m, -1).to_vector<float>();
  const std::vector<float> ly = log_softmax(m, -1).to_vector<float>();
  CHECK(y[1] == 0.0f);
  CHECK(ly[1] == -INFINITY);
  CHECK(std::abs(y[0] + y[2] - 1) < 1e-6);
  for (int i = 3; i < 6; ++i) {
    CHECK(std::isnan(y[i]));
    CHECK(std::isnan(ly[i]));
  }
  // NaN anywhere in a row makes the whole row NaN (as in torch).
  const std::vector<float> n =
      softmax(Tensor::from_vector<float>({1, NAN, 2}, {3}), 0).to_vector<float>();
  for (float e : n) CHECK(std::isnan(e));
}

TEST_CASE(
    "softmax_backward, log_softmax_backward: equal central differences of the naive forward") {
  // L(x) = sum(gy * f(x)); dL/dx_i by central differences (h = 1e-5) of the f64 naive forward.
  // Truncation error ~h^2 and rounding ~1e-16/h, so 1e-7 absolute is safe.
  const Shape s = {3, 4, 5};
  const Tensor x = test::random_tensor(s, DType::f64, 21, -2, 2);
  const Tensor gy = test::random_tensor(s, DType::f64, 22, -1, 1);
  const std::vector<double> xv = x.to_vector<double>(), gv = gy.to_vector<double>();
  for (bool log : {false, true})
    for (int dim = 0; dim < 3; ++dim) {
      INFO((log ? "log_softmax" : "softmax") << " dim " << dim);
      auto loss = [&](const std::vector<double>& at) {
        const std::vector<double> f = naive_softmax(at, s, dim, log);
        double l = 0;
        for (size_t i = 0; i < f.size(); ++i) l += gv[i] * f[i];
        return l;
      };
      std::vector<double> fd(xv.size());
      const double h = 1e-5;
      for (size_t i = 0; i < xv.size(); ++i) {
        std::vector<double> p = xv, m = xv;
        p[i] += h;
        m[i] -= h;
        fd[i] = (loss(p) - loss(m)) / (2 * h);
      }
      const Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
      const Tensor gx = log ? log_softmax_backward(y, gy, dim) : softmax_backward(y, gy, dim);
      CHECK_CLOSE(gx, f64(fd, s), 1e-6, 1e-7);
    }
}

TEST_CASE(
    "softmax_backward, log_softmax_backward: match the analytic formula, strided f32, odd sizes") {
  // f32 tolerance: gy - sum(gy y) cancels terms of size ~1, leaving ~1e-7 absolute error.
  for (const Shape& s : {Shape{5, 7, 9}, Shape{3, 5, 131}, Shape{37, 41, 29}})
    for (bool log : {false, true})
      for (int dim = 0; dim < 3; ++dim) {
        INFO(shape_str(s) << (log ? " log_softmax" : " softmax") << " dim " << dim);
        const Tensor x = test::random_tensor(s, DType::f32, 31, -3, 3);
        const Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
        const Tensor gy = test::random_tensor(s, DType::f32, 32, -1, 1);
        const Tensor gx =
            log ? log_softmax_backward(test::strided_copy(y), test::strided_copy(gy), dim)
                : softmax_backward(test::strided_copy(y), test::strided_copy(gy), dim);
        const std::vector<double> want =
            naive_backward(y.to_vector<double>(), gy.to_vector<double>(), s, dim, log);
        CHECK_CLOSE(gx, f64(want, s), 1e-5, 1e-6);
      }
}

TEST_CASE("softmax: a 0-dim tensor is one element; empty tensors keep their shape") {
  CHECK(softmax(Tensor::scalar(3.5), 0).item() == 1.0);
  CHECK(log_softmax(Tensor::scalar(3.5, DType::f64), -1).item() == 0.0);
  CHECK(softmax(zeros({0, 5}), 1).shape() == Shape{0, 5});
  CHECK(softmax_backward(zeros({4, 0}), zeros({4, 0}), 0).shape() == Shape{4, 0});
}

TEST_CASE("softmax: errors name the op") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(softmax(zeros({2, 3}, DType::i64), 0), doctest::Contains("[softmax]"),
                       Error);
  CHECK_THROWS_WITH_AS(softmax(x, 2), doctest::Contains("[softmax]"), Error);
  CHECK_THROWS_WITH_AS(log_softmax(x, -3), doctest::Contains("[log_softmax]"), Error);
  CHECK_THROWS_WITH_AS(log_softmax(Tensor(), 0), doctest::Contains("[log_softmax]"), Error);
  CHECK_THROWS_WITH_AS(softmax_backward(x, zeros({3, 2}), 0),
                       doctest::Contains("[softmax_backward]"), Error);
  CHECK_THROWS_WITH_AS(log_softmax_backward(x, zeros({2, 3}, DType::f64), 1),
                       doctest::Contains("[log_softmax_backward]"), Error);
  CHECK_THROWS_WITH_AS(softmax_backward(x, x, 5), doctest::Contains("[softmax_backward]"), Error);
}

TEST_CASE("softmax: CPU and CUDA agree (forward and backward, every dim)") {
  const Tensor x = test::random_tensor({6, 33, 17}, DType::f32, 41, -3, 3);
  const Tensor gy = test::random_tensor({6, 33, 17}, DType::f32, 42, -1, 1);
  test::check_cuda_matches_cpu(
      "softmax",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{softmax(in[0], 0), softmax(in[0], 1), softmax(in[0], 2)};
      },
      {x});
  test::check_cuda_matches_cpu(
      "log_softmax",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{log_softmax(in[0], 0), log_softmax(in[0], -1)};
      },
      {x}, 1e-5, 1e-5);
  test::check_cuda_matches_cpu("softmax_backward",
                               [](const std::vector<Tensor>& in) {
                                 return std::vector<Tensor>{softmax_backward(in[0], in[1], 1),
                                                            log_softmax_backward(in[0], in[1], 2)};
                               },
                               {softmax(x, 1), gy});
}

TEST_CASE("vec_math: exp_f32 within 2 ulp of exp; 0 below -87.34, inf above 88.38, NaN stays NaN") {
  // Sweep [-87.3, 88.3] with a step that is not a multiple of anything in the algorithm.
  double worst = 0;
  for (double x = -87.3; x < 88.3; x += 0.000731) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::abs(cpu::exp_f32(xf) - want) / want);
  }
  CHECK(worst < 2.4e-7);  // 2 ulp of f32 (2^-22)
  CHECK(cpu::exp_f32(0.0f) == 1.0f);
  CHECK(cpu::exp_f32(-INFINITY) == 0.0f);
  CHECK(cpu::exp_f32(-1000.0f) == 0.0f);
  CHECK(cpu::exp_f32(1000.0f) == INFINITY);
  CHECK(cpu::exp_f32(INFINITY) == INFINITY);
  CHECK(std::isnan(cpu::exp_f32(NAN)));
  CHECK(std::isnan(cpu::exp_f32(-NAN)));
  // max_of through order keys: the float order, -0 below +0, NaN (sign clear) above +inf.
  const std::vector<float> v = {-3, -0.0f, 0.0f, -INFINITY, 2.5f, -7};
  CHECK(cpu::max_of(v.data(), 6) == 2.5f);
  CHECK(cpu::max_of(v.data(), 2) == -0.0f);
  CHECK(!std::signbit(cpu::max_of(v.data() + 1, 2)));
  CHECK(cpu::max_of(v.data() + 3, 1) == -INFINITY);
  const std::vector<double> d = {-1e300, -2, -1e-300};
  CHECK(cpu::max_of(d.data(), 3) == -1e-300);
  const std::vector<float> n = {1, NAN, 2};
  CHECK(std::isnan(cpu::max_of(n.data(), 3)));
  for (float f : {-5.0f, -0.0f, 0.0f, 1e-30f, 3e38f, -INFINITY})
    CHECK(cpu::from_order_key<float>(cpu::order_key(f)) == f);
}

namespace {

// Mean |t| over the elements: the scale of a gradient, for absolute tolerances.
double mean_abs(const Tensor& t) {
  double s = 0;
  for (double v : t.to_vector<double>()) s += std::abs(v);
  return s / static_cast<double>(std::max<int64_t>(1, t.numel()));
}

// Runs softmax, log_softmax and both backwards along `dim` on each backend (x, gy and, when
// `strided`, strided views of them made on that device) and checks CUDA against the CPU.
void check_softmax_on_cuda(const Shape& s, int dim, DType dt, bool strided, uint64_t seed) {
  using V = std::vector<Tensor>;
  INFO(shape_str(s) << " dim " << dim << " " << dtype_name(dt) << (strided ? " strided" : ""));
  const Tensor x = test::random_tensor(s, dt, seed, -3, 3);
  const Tensor gy = test::random_tensor(s, dt, seed + 1, -1, 1);
  auto view = [strided](const Tensor& t) { return strided ? test::strided_copy(t) : t; };
  // f32 forward: both backends sum exp in f32 in different orders (the CPU in SIMD lanes of up to
  // 12500 terms for the longest rows, ~3e-6 relative) and each exp is within 2 ulp, so softmax
  // agrees to 5e-5 relative; log_softmax values reach ~17: 1e-5 absolute. The backward subtracts
  // a row sum from gy, so its error is relative to the gradient's scale, not to each element:
  // atol = 1e-5 x mean |gx| (softmax gradients shrink like 1 / D). f64: rounding only.
  const bool f32 = dt == DType::f32;
  for (bool log : {false, true}) {
    INFO((log ? "log_softmax" : "softmax"));
    auto forward = [&](const Tensor& t) { return log ? log_softmax(t, dim) : softmax(t, dim); };
    auto backward = [&](const Tensor& y, const Tensor& g) {
      return log ? log_softmax_backward(y, g, dim) : softmax_backward(y, g, dim);
    };
    test::check_cuda_matches_cpu(
        "forward", [&](const V& in) { return V{forward(view(in[0]))}; }, {x},
        f32 ? (log ? 1e-5 : 5e-5) : 1e-10, f32 ? (log ? 1e-5 : 1e-12) : 1e-12);
    const Tensor y = forward(x);  // the CPU's, fed to both backends' backward
    const double scale = mean_abs(backward(y, gy));
    test::check_cuda_matches_cpu(
        "backward", [&](const V& in) { return V{backward(view(in[0]), view(in[1]))}; }, {y, gy},
        f32 ? 1e-4 : 1e-9, (f32 ? 1e-5 : 1e-11) * scale);
  }
}

}  // namespace

TEST_CASE("softmax: CUDA matches CPU on long and many rows, columns, every dim, strided, f32/f64") {
  // Last-dim rows held in registers by a warp (37, 256, 1024 long), rows just past that (1025),
  // long rows with one block each (5000, 100000), columns (inner > 1, including D = 1000 over 3
  // columns and 70 columns over 40), and every dim of an odd 3-D shape.
  const std::vector<std::pair<Shape, int>> cases = {
      {{3000, 37}, 1},  {{64, 256}, 1},   {{130, 1024}, 1}, {{7, 1025}, 1},
      {{4, 5000}, 1},   {{2, 100000}, 1}, {{1000, 3}, 0},   {{3, 40, 70}, 1},
      {{5, 33, 17}, 0}, {{5, 33, 17}, 1}, {{5, 33, 17}, 2}, {{2, 2000, 2}, 1}};
  uint64_t seed = 51;
  for (DType dt : {DType::f32, DType::f64})
    for (const auto& [s, dim] : cases)
      for (bool strided : {false, true}) check_softmax_on_cuda(s, dim, dt, strided, seed += 2);
}

TEST_CASE("softmax: cuDNN (RELPOS_CUDNN_SOFTMAX=1) matches the CPU too") {
  // The same checks with cuDNN's softmax in place of our kernels; the switch is reset on exit,
  // even when a check aborts the test case.
  struct CudnnSwitch {
    CudnnSwitch() { setenv("RELPOS_CUDNN_SOFTMAX", "1", 1); }
    ~CudnnSwitch() { unsetenv("RELPOS_CUDNN_SOFTMAX"); }
  } on;
  for (DType dt : {DType::f32, DType::f64}) {
    check_softmax_on_cuda({64, 256}, 1, dt, false, 71);
    check_softmax_on_cuda({4, 5000}, 1, dt, true, 73);
    check_softmax_on_cuda({5, 33, 17}, 1, dt, false, 75);
  }
}

TEST_CASE("softmax: CUDA matches CPU on +-1000, -inf, all -inf and NaN rows; errors name the op") {
  using V = std::vector<Tensor>;
  const std::vector<float> v = {1000,      -1000,     0,         999.5f, -1000, 1000, -1000, -999,
                                -INFINITY, -INFINITY, -INFINITY, 2,      NAN,   1,    0,     3};
  for (DType dt : {DType::f32, DType::f64}) {
    INFO("dtype " << dtype_name(dt));
    const Tensor x = cast(Tensor::from_vector(v, {4, 4}), dt);
    test::check_cuda_matches_cpu(
        "softmax special values",
        [](const V& in) {
          return V{softmax(in[0], 1), log_softmax(in[0], 1), softmax(in[0], 0),
                   log_softmax(in[0], 0)};
        },
        {x}, 1e-5, 1e-6);
  }
  if (cuda_available()) {
    const Tensor g = zeros({2, 3}, DType::f32, Device::cuda(0));
    CHECK_THROWS_WITH_AS(softmax(zeros({2, 3}, DType::i64, Device::cuda(0)), 0),
                         doctest::Contains("[softmax]"), Error);
    CHECK_THROWS_WITH_AS(softmax_backward(g, zeros({2, 3}), 1),
                         doctest::Contains("[softmax_backward]"), Error);
    CHECK_THROWS_WITH_AS(log_softmax_backward(g, zeros({2, 3}, DType::f64, Device::cuda(0)), 1),
                         doctest::Contains("[log_softmax_backward]"), Error);
  }
}
