// layer_norm and layer_norm_backward against plain f64 loops: with and without weight/bias, odd
// D, strided inputs, the threaded path, a large common offset, central differences, errors.
#include <omp.h>

#include <cmath>

#include "tests/harness.h"

using namespace relpos;

namespace {

// x: [R, D] values; w, b: [D] or empty (then 1 and 0). Returns y [R, D], mean [R], rstd [R].
struct Naive {
  std::vector<double> y, mean, rstd;
};
Naive naive_layer_norm(const std::vector<double>& x, const std::vector<double>& w,
                       const std::vector<double>& b, int64_t D, double eps) {
  const int64_t R = static_cast<int64_t>(x.size()) / D;
  Naive n{std::vector<double>(x.size()), std::vector<double>(R), std::vector<double>(R)};
  for (int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < D; ++i) mean += x[r * D + i] / D;
    for (int64_t i = 0; i < D; ++i) var += (x[r * D + i] - mean) * (x[r * D + i] - mean) / D;
    n.mean[r] = mean;
    n.rstd[r] = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < D; ++i)
      n.y[r * D + i] =
          (x[r * D + i] - mean) * n.rstd[r] * (w.empty() ? 1 : w[i]) + (b.empty() ? 0 : b[i]);
  }
  return n;
}

// Analytic gradients with g = gy * w, xhat = (x - mean) rstd:
// dx = rstd (g - mean(g) - xhat mean(g xhat)), dw = sum_rows gy xhat, db = sum_rows gy.
struct NaiveGrads {
  std::vector<double> dx, dw, db;
};
NaiveGrads naive_backward(const std::vector<double>& gy, const std::vector<double>& x,
                          const std::vector<double>& w, int64_t D, double eps) {
  const Naive f = naive_layer_norm(x, {}, {}, D, eps);  // f.y = xhat
  const int64_t R = static_cast<int64_t>(x.size()) / D;
  NaiveGrads g{std::vector<double>(x.size()), std::vector<double>(D), std::vector<double>(D)};
  for (int64_t r = 0; r < R; ++r) {
    double mg = 0, mgx = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double gi = gy[r * D + i] * (w.empty() ? 1 : w[i]);
      mg += gi / D;
      mgx += gi * f.y[r * D + i] / D;
      g.dw[i] += gy[r * D + i] * f.y[r * D + i];
      g.db[i] += gy[r * D + i];
    }
    for (int64_t i = 0; i < D; ++i) {
      const double gi = gy[r * D + i] * (w.empty() ? 1 : w[i]);
      g.dx[r * D + i] = f.rstd[r] * (gi - mg - f.y[r * D + i] * mgx);
    }
  }
  return g;
}

Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector(v, s);
}
std::vector<double> values(const Tensor& t) {
  return t.defined() ? t.to_vector<double>() : std::vector<double>{};
}
Shape rows_of(const Shape& s) {
  return Shape(s.begin(), s.end() - 1);
}

}  // namespace

TEST_CASE("layer_norm: y, mean, rstd match the naive formula with/without weight and bias, odd D") {
  // f32: y is a few ulp off (rstd rounded to f32, then (x - mean) * rstd * w + b), so 1e-5.
  const double eps = 1e-5;
  for (DType dt : {DType::f32, DType::f64})
    for (const Shape& s : {Shape{3, 5, 7}, Shape{13}, Shape{64, 1031}})
      for (int mode = 0; mode < 4; ++mode) {
        const bool has_w = mode & 1, has_b = mode & 2;
        INFO(dtype_name(dt) << " " << shape_str(s) << " weight " << has_w << " bias " << has_b);
        const int64_t D = s.back();
        const Tensor x = test::random_tensor(s, dt, 51, -2, 3);
        const Tensor w = has_w ? test::random_tensor({D}, dt, 52, 0.5, 1.5) : Tensor();
        const Tensor b = has_b ? test::random_tensor({D}, dt, 53, -1, 1) : Tensor();
        const LayerNormResult r =
            layer_norm(test::strided_copy(x), has_w ? test::strided_copy(w) : w,
                       has_b ? test::strided_copy(b) : b, eps);
        const Naive n = naive_layer_norm(x.to_vector<double>(), values(w), values(b), D, eps);
        const double tol = dt == DType::f32 ? 1e-5 : 1e-12;
        CHECK(r.y.dtype() == dt);
        CHECK_CLOSE(r.y, f64(n.y, s), tol, tol);
        CHECK_CLOSE(r.mean, f64(n.mean, rows_of(s)), tol, tol);
        CHECK_CLOSE(r.rstd, f64(n.rstd, rows_of(s)), tol, tol);
      }
}

TEST_CASE("layer_norm: a large common offset does not lose the variance (f32)") {
  // x = 1e4 + u, u in [-1, 1): a one-pass E[x^2] - E[x]^2 in f32 would cancel catastrophically.
  const Tensor x = add_scalar(test::random_tensor({9, 257}, DType::f32, 54, -1, 1), 1e4);
  const LayerNormResult r = layer_norm(x, Tensor(), Tensor(), 1e-6);
  const Naive n = naive_layer_norm(x.to_vector<double>(), {}, {}, 257, 1e-6);
  CHECK_CLOSE(r.rstd, f64(n.rstd, {9}), 1e-5, 0);
  CHECK_CLOSE(r.y, f64(n.y, {9, 257}), 1e-3, 1e-3);  // x - mean itself is rounded at 1e4 (ulp 1e-3)
}

TEST_CASE("layer_norm_backward: equals central differences of the naive forward (f64)") {
  // L = sum(gy * y(x, w, b)); h = 1e-6 central differences: error ~h^2 + 1e-16/h, so 1e-7.
  const int64_t R = 3, D = 5;
  const double eps = 1e-3;
  const Tensor x = test::random_tensor({R, D}, DType::f64, 61, -2, 2);
  const Tensor w = test::random_tensor({D}, DType::f64, 62, 0.5, 1.5);
  const Tensor b = test::random_tensor({D}, DType::f64, 63, -1, 1);
  const Tensor gy = test::random_tensor({R, D}, DType::f64, 64, -1, 1);
  std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(),
                      bv = b.to_vector<double>();
  const std::vector<double> gv = gy.to_vector<double>();
  auto loss = [&] {
    const Naive n = naive_layer_norm(xv, wv, bv, D, eps);
    double l = 0;
    for (size_t i = 0; i < n.y.size(); ++i) l += gv[i] * n.y[i];
    return l;
  };
  auto central = [&](std::vector<double>& v) {
    std::vector<double> d(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double keep = v[i], h = 1e-6;
      v[i] = keep + h;
      const double lp = loss();
      v[i] = keep - h;
      const double lm = loss();
      v[i] = keep;
      d[i] = (lp - lm) / (2 * h);
    }
    return d;
  };
  const std::vector<double> fdx = central(xv), fdw = central(wv), fdb = central(bv);
  const LayerNormResult r = layer_norm(x, w, b, eps);
  const LayerNormGrads g = layer_norm_backward(gy, x, r.mean, r.rstd, w, true);
  CHECK_CLOSE(g.dx, f64(fdx, {R, D}), 1e-6, 1e-7);
  CHECK_CLOSE(g.dweight, f64(fdw, {D}), 1e-6, 1e-7);
  CHECK_CLOSE(g.dbias, f64(fdb, {D}), 1e-6, 1e-7);
}

TEST_CASE("layer_norm_backward: matches the analytic formula, strided f32, odd D, threaded path") {
  // f32: dx subtracts two means of size ~1 (cancellation ~1e-6); dweight/dbias sum up to 64 rows.
  for (const Shape& s : {Shape{3, 5, 7}, Shape{64, 1031}})
    for (bool has_w : {true, false})
      for (bool has_b : {true, false}) {
        INFO(shape_str(s) << " weight " << has_w << " bias " << has_b);
        const int64_t D = s.back();
        const Tensor x = test::random_tensor(s, DType::f32, 71, -2, 2);
        const Tensor w = has_w ? test::random_tensor({D}, DType::f32, 72, 0.5, 1.5) : Tensor();
        const Tensor gy = test::random_tensor(s, DType::f32, 73, -1, 1);
        const LayerNormResult r = layer_norm(x, w, Tensor(), 1e-5);
        const LayerNormGrads g = layer_norm_backward(
            test::strided_copy(gy), test::strided_copy(x), test::strided_copy(r.mean),
            test::strided_copy(r.rstd), has_w ? test::strided_copy(w) : w, has_b);
        const NaiveGrads n =
            naive_backward(gy.to_vector<double>(), x.to_vector<double>(), values(w), D, 1e-5);
        CHECK_CLOSE(g.dx, f64(n.dx, s), 1e-4, 1e-5);
        CHECK(g.dweight.defined() == has_w);
        CHECK(g.dbias.defined() == has_b);
        if (has_w) CHECK_CLOSE(g.dweight, f64(n.dw, {D}), 1e-5, 1e-5);
        if (has_b) CHECK_CLOSE(g.dbias, f64(n.db, {D}), 1e-5, 1e-5);
      }
}

TEST_CASE("layer_norm_backward: weight and bias gradients do not depend on the thread count") {
  const Tensor x = test::random_tensor({301, 67}, DType::f32, 81, -2, 2);
  const Tensor w = test::random_tensor({67}, DType::f32, 82, 0.5, 1.5);
  const Tensor gy = test::random_tensor({301, 67}, DType::f32, 83, -1, 1);
  const LayerNormResult r = layer_norm(x, w, Tensor(), 1e-5);
  const LayerNormGrads many = layer_norm_backward(gy, x, r.mean, r.rstd, w, true);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const LayerNormGrads one = layer_norm_backward(gy, x, r.mean, r.rstd, w, true);
  omp_set_num_threads(threads);
  CHECK(one.dweight.to_vector<float>() == many.dweight.to_vector<float>());
  CHECK(one.dbias.to_vector<float>() == many.dbias.to_vector<float>());
}

TEST_CASE("layer_norm: no rows gives empty outputs and zero parameter gradients") {
  const LayerNormResult r = layer_norm(zeros({0, 4}), ones({4}), zeros({4}), 1e-5);
  CHECK(r.y.shape() == Shape{0, 4});
  CHECK(r.mean.shape() == Shape{0});
  const LayerNormGrads g =
      layer_norm_backward(zeros({0, 4}), zeros({0, 4}), zeros({0}), zeros({0}), ones({4}), true);
  CHECK(g.dweight.to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(g.dbias.to_vector<float>() == std::vector<float>(4, 0.0f));
}

TEST_CASE("layer_norm: errors name the op") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(layer_norm(x, zeros({4}), Tensor(), 1e-5), doctest::Contains("[layer_norm]"),
                       Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor(), zeros({3}, DType::f64), 1e-5),
                       doctest::Contains("[layer_norm]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 3}, DType::i32), Tensor(), Tensor(), 1e-5),
                       doctest::Contains("[layer_norm]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, Tensor(), Tensor(), -1), doctest::Contains("[layer_norm]"),
                       Error);
  CHECK_THROWS_WITH_AS(layer_norm(zeros({2, 0}), Tensor(), Tensor(), 1e-5),
                       doctest::Contains("[layer_norm]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(Tensor::scalar(1), Tensor(), Tensor(), 1e-5),
                       doctest::Contains("[layer_norm]"), Error);
  const LayerNormResult r = layer_norm(x, Tensor(), Tensor(), 1e-5);
  CHECK_THROWS_WITH_AS(layer_norm_backward(zeros({2, 4}), x, r.mean, r.rstd, Tensor(), false),
                       doctest::Contains("[layer_norm_backward]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm_backward(x, x, zeros({3}), r.rstd, Tensor(), false),
                       doctest::Contains("[layer_norm_backward]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm_backward(x, x, r.mean, r.rstd, zeros({2}), false),
                       doctest::Contains("[layer_norm_backward]"), Error);
}

TEST_CASE("layer_norm: CPU and CUDA agree (forward and backward)") {
  const Tensor x = test::random_tensor({7, 33, 65}, DType::f32, 91, -2, 2);
  const Tensor w = test::random_tensor({65}, DType::f32, 92, 0.5, 1.5);
  const Tensor b = test::random_tensor({65}, DType::f32, 93, -1, 1);
  const Tensor gy = test::random_tensor({7, 33, 65}, DType::f32, 94, -1, 1);
  test::check_cuda_matches_cpu(
      "layer_norm",
      [](const std::vector<Tensor>& in) {
        const LayerNormResult r = layer_norm(in[0], in[1], in[2], 1e-5);
        const LayerNormGrads g = layer_norm_backward(in[3], in[0], r.mean, r.rstd, in[1], true);
        return std::vector<Tensor>{r.y, r.mean, r.rstd, g.dx, g.dweight, g.dbias};
      },
      {x, w, b, gy}, 1e-4, 1e-4);
}

TEST_CASE("layer_norm: CUDA matches CPU on many, long and odd rows, with/without weight and bias") {
  using V = std::vector<Tensor>;
  // Rows held by a warp (1, 33, 256, 512, 1024 long; 5000 rows: 512 row blocks of partial
  // dweight/dbias sums), rows past that (513: backward by blocks; 1025, 5000, 100000: forward
  // too), a 3-D x, and a large common offset.
  const std::vector<Shape> shapes = {{7, 1},      {5000, 33}, {64, 256},  {2, 33, 512}, {130, 1024},
                                     {1000, 513}, {3, 1025},  {11, 5000}, {2, 100000}};
  const double eps = 1e-5;
  for (DType dt : {DType::f32, DType::f64})
    for (const Shape& s : shapes)
      for (int mode = 0; mode < 4; ++mode) {
        const bool has_w = mode & 1, has_b = mode & 2, strided = mode == 3;
        INFO(dtype_name(dt) << " " << shape_str(s) << " weight " << has_w << " bias " << has_b);
        const int64_t D = s.back();
        const Tensor x = test::random_tensor(s, dt, 95, -2, 2);
        const Tensor w = test::random_tensor({D}, dt, 96, 0.5, 1.5);
        const Tensor b = test::random_tensor({D}, dt, 97, -1, 1);
        const Tensor gy = test::random_tensor(s, dt, 98, -1, 1);
        auto view = [strided](const Tensor& t) { return strided ? test::strided_copy(t) : t; };
        auto forward = [&](const V& in) {
          return layer_norm(view(in[0]), has_w ? in[1] : Tensor(), has_b ? in[2] : Tensor(), eps);
        };
        // Row statistics are f64 sums on both backends, so mean/rstd/y differ by an ulp or two
        // of f32 (1e-5 on values of size ~3).
        test::check_cuda_matches_cpu(
            "layer_norm",
            [&](const V& in) {
              const LayerNormResult r = forward(in);
              return V{r.y, r.mean, r.rstd};
            },
            {x, w, b}, dt == DType::f32 ? 1e-5 : 1e-12, dt == DType::f32 ? 1e-5 : 1e-12);
        // dx cancels g against two row means of size ~1: 1e-5 absolute in f32. dweight/dbias
        // are f64 sums of the same f32 products in another order.
        test::check_cuda_matches_cpu(
            "layer_norm_backward",
            [&](const V& in) {
              const LayerNormResult r = forward(in);
              const LayerNormGrads g = layer_norm_backward(view(in[3]), view(in[0]), r.mean, r.rstd,
                                                           has_w ? in[1] : Tensor(), has_b);
              V out{g.dx};
              if (has_w) out.push_back(g.dweight);
              if (has_b) out.push_back(g.dbias);
              return out;
            },
            {x, w, b, gy}, dt == DType::f32 ? 1e-4 : 1e-10, dt == DType::f32 ? 1e-5 : 1e-11);
      }
  // A large common offset: the two-pass f64 statistics keep the variance on both backends.
  const Tensor off = add_scalar(test::random_tensor({9, 257}, DType::f32, 99, -1, 1), 1e4);
  test::check_cuda_matches_cpu(
      "layer_norm with offset",
      [](const V& in) {
        const LayerNormResult r = layer_norm(in[0], Tensor(), Tensor(), 1e-6);
        return V{r.mean, r.rstd};
      },
      {off}, 1e-6, 0);
}

TEST_CASE("layer_norm_backward: CUDA dweight/dbias are deterministic (no atomics)") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA determinism of layer_norm_backward");
    return;
  }
  const Device gpu = Device::cuda(0);
  for (const Shape& s : {Shape{5000, 67}, Shape{700, 1500}}) {
    INFO(shape_str(s));
    const Tensor x = test::random_tensor(s, DType::f32, 85, -2, 2).to(gpu);
    const Tensor w = test::random_tensor({s[1]}, DType::f32, 86, 0.5, 1.5).to(gpu);
    const Tensor gy = test::random_tensor(s, DType::f32, 87, -1, 1).to(gpu);
    const LayerNormResult r = layer_norm(x, w, Tensor(), 1e-5);
    const LayerNormGrads a = layer_norm_backward(gy, x, r.mean, r.rstd, w, true);
    const LayerNormGrads b = layer_norm_backward(gy, x, r.mean, r.rstd, w, true);
    CHECK(a.dweight.to_vector<float>() == b.dweight.to_vector<float>());
    CHECK(a.dbias.to_vector<float>() == b.dbias.to_vector<float>());
    CHECK(a.dx.to_vector<float>() == b.dx.to_vector<float>());
  }
}
