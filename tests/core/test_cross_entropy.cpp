// cross_entropy and cross_entropy_backward against plain f64 loops: every reduction, ignored rows,
// i32/i64 targets, strided logits, the threaded path, extreme logits, central differences, errors.
#include <cmath>

#include "tests/harness.h"

using namespace relpos;

namespace {

// Per-row loss logsumexp(x[n]) - x[n, t[n]], 0 where t[n] == ignore.
std::vector<double> naive_losses(const std::vector<double>& x, const std::vector<int64_t>& t,
                                 int64_t C, int64_t ignore) {
  std::vector<double> loss(t.size(), 0.0);
  for (size_t n = 0; n < t.size(); ++n) {
    if (t[n] == ignore) continue;
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[n * C + c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[n * C + c] - m);
    loss[n] = m + std::log(s) - x[n * C + t[n]];
  }
  return loss;
}

int64_t kept(const std::vector<int64_t>& t, int64_t ignore) {
  int64_t k = 0;
  for (int64_t v : t) k += v != ignore;
  return k;
}

// d loss / d x for the reduction with upstream gradient g ([N] for none, g[0] otherwise).
std::vector<double> naive_grad(const std::vector<double>& x, const std::vector<int64_t>& t,
                               int64_t C, int64_t ignore, Reduction red,
                               const std::vector<double>& g) {
  std::vector<double> dx(x.size(), 0.0);
  const double k = static_cast<double>(kept(t, ignore));
  for (size_t n = 0; n < t.size(); ++n) {
    if (t[n] == ignore) continue;
    const double rg = red == Reduction::none ? g[n] : red == Reduction::sum ? g[0] : g[0] / k;
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[n * C + c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[n * C + c] - m);
    for (int64_t c = 0; c < C; ++c)
      dx[n * C + c] = rg * (std::exp(x[n * C + c] - m) / s - (c == t[n] ? 1 : 0));
  }
  return dx;
}

double reduce(const std::vector<double>& loss, Reduction red, int64_t k) {
  double s = 0;
  for (double l : loss) s += l;
  return red == Reduction::sum ? s : (k == 0 ? 0 : s / k);
}

// Targets in [0, C) with every third row set to `ignore`.
std::vector<int64_t> make_targets(int64_t N, int64_t C, int64_t ignore, uint64_t seed) {
  std::vector<int64_t> t = test::random_indices({N}, C, seed).to_vector<int64_t>();
  for (int64_t n = 0; n < N; n += 3) t[n] = ignore;
  return t;
}

Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector(v, s);
}

}  // namespace

TEST_CASE(
    "cross_entropy: losses, sum and mean match the naive formula; ignored rows count for nothing") {
  // f32: logsumexp of 11 terms in f32 with a ~1 ulp exp, so 1e-5.
  const int64_t N = 13, C = 11;
  for (DType dt : {DType::f32, DType::f64})
    for (DType tdt : {DType::i32, DType::i64})
      for (int64_t ignore : {int64_t{-100}, int64_t{3}}) {
        INFO(dtype_name(dt) << " targets " << dtype_name(tdt) << " ignore_index " << ignore);
        const Tensor x = test::random_tensor({N, C}, dt, 101, -4, 4);
        const std::vector<int64_t> t = make_targets(N, C, ignore, 102);
        const Tensor target = cast(Tensor::from_vector(t, {N}), tdt);
        const std::vector<double> want = naive_losses(x.to_vector<double>(), t, C, ignore);
        const Tensor xs = test::strided_copy(x);
        const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
        const Tensor none = cross_entropy(xs, target, ignore, Reduction::none);
        CHECK(none.dtype() == dt);
        CHECK_CLOSE(none, f64(want, {N}), tol, tol);
        for (Reduction red : {Reduction::sum, Reduction::mean}) {
          const Tensor r = cross_entropy(xs, target, ignore, red);
          CHECK(r.shape() == Shape{});
          CHECK(std::abs(r.item() - reduce(want, red, kept(t, ignore))) <= tol * (1 + r.item()));
        }
      }
}

TEST_CASE("cross_entropy: mean over no kept rows is 0; +-1000 logits stay finite; threaded path") {
  const Tensor x = test::random_tensor({4, 5}, DType::f32, 103);
  const Tensor all_ignored = Tensor::from_vector<int64_t>({-100, -100, -100, -100}, {4});
  CHECK(cross_entropy(x, all_ignored).item() == 0.0);
  CHECK(cross_entropy(x, all_ignored, -100, Reduction::sum).item() == 0.0);
  CHECK(cross_entropy(zeros({0, 5}), zeros({0}, DType::i64)).item() == 0.0);

  const Tensor big = Tensor::from_vector<float>({1000, -1000, 0, -1000, 1000, 999}, {2, 3});
  const Tensor t = Tensor::from_vector<int64_t>({1, 2}, {2});
  const Tensor l = cross_entropy(big, t, -100, Reduction::none);
  CHECK(all_finite(l));
  CHECK_CLOSE(l, f64(naive_losses(big.to_vector<double>(), {1, 2}, 3, -100), {2}), 1e-6, 1e-5);

  // 300 x 151 > 32768 logits: the OpenMP loop runs.
  const Tensor wide = test::random_tensor({300, 151}, DType::f32, 104, -3, 3);
  const std::vector<int64_t> tw = make_targets(300, 151, -100, 105);
  CHECK_CLOSE(cross_entropy(wide, Tensor::from_vector(tw, {300}), -100, Reduction::none),
              f64(naive_losses(wide.to_vector<double>(), tw, 151, -100), {300}), 1e-5, 1e-5);
}

TEST_CASE(
    "cross_entropy_backward: matches the naive gradient for every reduction, 0 on ignored rows") {
  // f32: softmax - onehot entries of size <= 1, scaled by grads of size ~1: 1e-5.
  for (const Shape& s : {Shape{13, 11}, Shape{300, 151}})
    for (DType dt : {DType::f32, DType::f64})
      for (Reduction red : {Reduction::none, Reduction::sum, Reduction::mean}) {
        const int64_t N = s[0], C = s[1];
        INFO(shape_str(s) << " " << dtype_name(dt) << " reduction " << static_cast<int>(red));
        const Tensor x = test::random_tensor(s, dt, 111, -3, 3);
        const std::vector<int64_t> t = make_targets(N, C, 7, 112);
        const Tensor target = cast(Tensor::from_vector(t, {N}), DType::i32);
        const Tensor g =
            red == Reduction::none ? test::random_tensor({N}, dt, 113, -2, 2) : full({}, 1.7, dt);
        const Tensor dx =
            cross_entropy_backward(test::strided_copy(x), target,
                                   red == Reduction::none ? test::strided_copy(g) : g, 7, red);
        const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
        CHECK_CLOSE(dx,
                    f64(naive_grad(x.to_vector<double>(), t, C, 7, red, g.to_vector<double>()), s),
                    tol, tol);
        const std::vector<double> dv = dx.to_vector<double>();
        for (int64_t c = 0; c < C; ++c) CHECK(dv[c] == 0.0);  // row 0 is ignored
      }
}

TEST_CASE("cross_entropy_backward: equals central differences of cross_entropy (mean, f64)") {
  // h = 1e-6 central differences of the op itself: error ~h^2 + 1e-16/h, so 1e-7.
  const int64_t N = 5, C = 4;
  const Tensor x = test::random_tensor({N, C}, DType::f64, 121, -2, 2);
  const Tensor t = Tensor::from_vector<int64_t>({2, -100, 0, 3, 3}, {N});
  std::vector<double> xv = x.to_vector<double>(), fd(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    std::vector<double> p = xv, m = xv;
    p[i] += 1e-6;
    m[i] -= 1e-6;
    fd[i] =
        (cross_entropy(f64(p, {N, C}), t).item() - cross_entropy(f64(m, {N, C}), t).item()) / 2e-6;
  }
  const Tensor dx = cross_entropy_backward(x, t, full({}, 1.0, DType::f64), -100, Reduction::mean);
  CHECK_CLOSE(dx, f64(fd, {N, C}), 1e-6, 1e-7);
}

TEST_CASE("cross_entropy: errors name the op, the bad target and its row") {
  const Tensor x = zeros({5, 10});
  const Tensor bad = Tensor::from_vector<int64_t>({0, 1, 2, 12, 4}, {5});
  CHECK_THROWS_WITH_AS(cross_entropy(x, bad),
                       "[cross_entropy] target 12 out of range [0, 10) at row 3", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, cast(bad, DType::i32), -100, Reduction::none),
                       "[cross_entropy] target 12 out of range [0, 10) at row 3", Error);
  const Tensor at_c = Tensor::from_vector<int64_t>({0, 10, 2, 3, 4}, {5});  // C itself is out
  CHECK_THROWS_WITH_AS(cross_entropy(x, at_c),
                       "[cross_entropy] target 10 out of range [0, 10) at row 1", Error);
  const Tensor neg = Tensor::from_vector<int64_t>({0, -1, 2, 3, 4}, {5});
  CHECK_THROWS_WITH_AS(cross_entropy(x, neg), doctest::Contains("target -1 out of range"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy_backward(x, bad, full({}, 1.0), -100, Reduction::mean),
                       doctest::Contains("[cross_entropy_backward] target 12"), Error);
  const Tensor ok = zeros({5}, DType::i64);
  CHECK_THROWS_WITH_AS(cross_entropy(x, zeros({5})), doctest::Contains("[cross_entropy]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, zeros({4}, DType::i64)),
                       doctest::Contains("[cross_entropy]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({5, 10, 1}), ok), doctest::Contains("[cross_entropy]"),
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({5, 10}, DType::i32), ok),
                       doctest::Contains("[cross_entropy]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy_backward(x, ok, zeros({5}), -100, Reduction::mean),
                       doctest::Contains("[cross_entropy_backward]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy_backward(x, ok, zeros({}), -100, Reduction::none),
                       doctest::Contains("[cross_entropy_backward]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy_backward(x, ok, zeros({}, DType::f64), -100, Reduction::sum),
                       doctest::Contains("[cross_entropy_backward]"), Error);
}

TEST_CASE("cross_entropy: CPU and CUDA agree (forward, every reduction, and backward)") {
  const Tensor x = test::random_tensor({37, 19}, DType::f32, 131, -3, 3);
  const Tensor t = Tensor::from_vector(make_targets(37, 19, -100, 132), {37});
  test::check_cuda_matches_cpu(
      "cross_entropy",
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{
            cross_entropy(in[0], in[1], -100, Reduction::none),
            cross_entropy(in[0], in[1], -100, Reduction::sum),
            cross_entropy(in[0], in[1], -100, Reduction::mean),
            cross_entropy_backward(in[0], in[1], full({}, 1.0, DType::f32, in[0].device()), -100,
                                   Reduction::mean)};
      },
      {x, t}, 1e-5, 1e-5);
}

TEST_CASE("cross_entropy: CUDA matches CPU on many, long and odd rows, i32/i64 and strided ids") {
  using V = std::vector<Tensor>;
  // Rows of up to 1024 classes take a warp each, longer ones (1025, 5000, 100000) a block.
  const std::vector<Shape> shapes = {{3000, 37}, {257, 1024}, {64, 1025}, {5, 5000}, {3, 100000}};
  for (DType dt : {DType::f32, DType::f64})
    for (DType tdt : {DType::i32, DType::i64})
      for (const Shape& s : shapes) {
        const int64_t N = s[0], C = s[1];
        const int64_t ignore = tdt == DType::i32 ? -100 : 3;  // an ignore_index inside [0, C) too
        INFO(dtype_name(dt) << " " << shape_str(s) << " targets " << dtype_name(tdt));
        const Tensor x = test::random_tensor(s, dt, 141, -3, 3);
        // Targets and per-row grads as every other entry of [2N] buffers: strided views.
        const Tensor t2 =
            cast(Tensor::from_vector(make_targets(2 * N, C, ignore, 142), {2 * N}), tdt);
        const Tensor g2 = test::random_tensor({2 * N}, dt, 143, -2, 2);
        // f32: each backend sums exp in f32 in its own order (~3e-6 relative for 1e5 terms) and
        // exp is within 2 ulp: 1e-5 on losses of size ~5. Gradients: relative 1e-4, and an
        // absolute 1e-5 of their mean size (softmax entries shrink like 1 / C).
        const bool f32 = dt == DType::f32;
        auto losses = [N, ignore](const V& in) {
          const Tensor t = in[1].slice(0, 0, 2 * N, 2);
          return V{cross_entropy(in[0], t, ignore, Reduction::none),
                   cross_entropy(in[0], t, ignore, Reduction::mean)};
        };
        auto grads = [N, ignore](const V& in) {
          const Tensor t = in[1].slice(0, 0, 2 * N, 2), g = in[2].slice(0, 0, 2 * N, 2);
          const Tensor one = full({}, 0.7, in[0].dtype(), in[0].device());
          return V{cross_entropy_backward(in[0], t, g, ignore, Reduction::none),
                   cross_entropy_backward(in[0], t, one, ignore, Reduction::sum)};
        };
        test::check_cuda_matches_cpu("cross_entropy", losses, {x, t2}, f32 ? 1e-5 : 1e-11,
                                     f32 ? 1e-5 : 1e-11);
        double scale = 0;  // mean |dlogits| on the CPU
        for (double v : grads({x, t2, g2})[0].to_vector<double>()) scale += std::abs(v);
        scale /= static_cast<double>(N * C);
        test::check_cuda_matches_cpu("cross_entropy_backward", grads, {x, t2, g2},
                                     f32 ? 1e-4 : 1e-9, (f32 ? 1e-5 : 1e-11) * scale);
      }
}

TEST_CASE("cross_entropy: on CUDA an out-of-range target names the op, the first bad row, its id") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA errors of cross_entropy");
    return;
  }
  const Device gpu = Device::cuda(0);
  for (const Shape& s : {Shape{5, 10}, Shape{5, 2000}}) {  // a warp per row, a block per row
    INFO(shape_str(s));
    const int64_t C = s[1];
    const Tensor x = zeros(s, DType::f32, gpu);
    // Rows 1 and 3 are bad; row 1 must be reported whatever order the rows ran in.
    for (DType tdt : {DType::i64, DType::i32}) {
      const Tensor bad = cast(Tensor::from_vector<int64_t>({0, C + 5, 2, -4, 4}, {5}), tdt).to(gpu);
      const std::string want = "[cross_entropy] target " + std::to_string(C + 5) +
                               " out of range [0, " + std::to_string(C) + ") at row 1";
      CHECK_THROWS_WITH_AS(cross_entropy(x, bad, -100, Reduction::none), want.c_str(), Error);
      const std::string want_backward =
          "[cross_entropy_backward] target " + std::to_string(C + 5) + " out of range";
      CHECK_THROWS_WITH_AS(
          cross_entropy_backward(x, bad, full({}, 1.0, DType::f32, gpu), -100, Reduction::sum),
          doctest::Contains(want_backward.c_str()), Error);
    }
    const Tensor neg = Tensor::from_vector<int64_t>({0, 1, 2, -4, 4}, {5}).to(gpu);
    CHECK_THROWS_WITH_AS(cross_entropy(x, neg), doctest::Contains("target -4 out of range"), Error);
    const Tensor at_c = Tensor::from_vector<int64_t>({0, 1, 2, 3, C}, {5}).to(gpu);
    CHECK_THROWS_WITH_AS(cross_entropy(x, at_c), doctest::Contains("at row 4"), Error);
    // The ignore index itself is never out of range, even when negative.
    const Tensor ok = Tensor::from_vector<int64_t>({0, -7, 2, -7, 4}, {5}).to(gpu);
    CHECK(cross_entropy(x, ok, -7, Reduction::none).to_vector<float>()[1] == 0.0f);
  }
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({5, 10}, DType::f32, gpu), zeros({5}, DType::i64)),
                       doctest::Contains("[cross_entropy]"), Error);  // devices differ
}
