// Reductions (sum, mean, max, logsumexp over any dims; argmax) against plain loops over every
// element: dim sets, keepdim, f32/f64, strided inputs, the threaded paths, special values, errors.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/harness.h"

using namespace relpos;

namespace {

enum class Naive { sum, mean, max, lse };
const double kInf = std::numeric_limits<double>::infinity();

// The reduction of x over `dims` (non-negative) into x's shape with those dims set to 1.
std::vector<double> naive_reduce(const Tensor& x, const std::vector<int64_t>& dims, Naive op) {
  const std::vector<double> v = x.to_vector<double>();
  const Shape& s = x.shape();
  Shape out_shape = s;
  for (int64_t d : dims) out_shape[d] = 1;
  std::vector<double> acc(shape_numel(out_shape), op == Naive::max ? -kInf : 0.0);
  std::vector<double> count(acc.size(), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, stride = 1;  // o: index in the output
    for (int d = x.dim() - 1; d >= 0; --d) {
      o += (rem % s[d]) % out_shape[d] * stride;  // reduced dims map to index 0
      stride *= out_shape[d];
      rem /= s[d];
    }
    if (op == Naive::max)
      acc[o] = std::isnan(v[i]) || v[i] > acc[o] ? v[i] : acc[o];
    else
      acc[o] += op == Naive::lse ? std::exp(v[i]) : v[i];
    count[o] += 1;
  }
  for (size_t o = 0; o < acc.size(); ++o) {
    if (op == Naive::mean) acc[o] /= count[o];
    if (op == Naive::lse) acc[o] = std::log(acc[o]);
  }
  return acc;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    const bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced)
      out.push_back(s[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// Checks all four reductions of x over dims (given as non-negative, passed as `pass`).
void check_reductions(const Tensor& x, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& pass, bool keepdim, double rtol, double atol) {
  std::vector<int64_t> all;
  for (int64_t d = 0; d < x.dim(); ++d) all.push_back(d);
  const std::vector<int64_t>& nd = dims.empty() ? all : dims;
  const Shape shape = reduced_shape(x.shape(), dims, keepdim);
  auto want = [&](Naive op) { return Tensor::from_vector(naive_reduce(x, nd, op), shape); };
  CHECK_CLOSE(sum(x, pass, keepdim), want(Naive::sum), rtol, atol);
  CHECK_CLOSE(mean(x, pass, keepdim), want(Naive::mean), rtol, atol);
  CHECK_CLOSE(max(x, pass, keepdim), want(Naive::max), 0, 1e-300);  // a selection: exact
  CHECK_CLOSE(logsumexp(x, pass, keepdim), want(Naive::lse), rtol, atol);
}

}  // namespace

TEST_CASE("reduce: sum, mean, max, logsumexp equal plain loops for every dim set, keepdim") {
  // (dims as non-negative, dims as passed: negative and unsorted forms included)
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> dim_sets = {
      {{}, {}},
      {{0}, {0}},
      {{1}, {1}},
      {{3}, {-1}},
      {{0, 2}, {2, 0}},
      {{1, 3}, {-3, -1}},
      {{0, 1, 3}, {0, 1, 3}},
      {{0, 1, 2, 3}, {3, 2, 1, 0}}};
  for (DType dt : {DType::f32, DType::f64}) {
    // f32 sums accumulate in double and round once: 1e-6; exp in f32 adds ~1e-7 per term to
    // logsumexp. f64: rounding of ~100 terms.
    const double rtol = dt == DType::f32 ? 2e-6 : 1e-12, atol = dt == DType::f32 ? 1e-6 : 1e-13;
    const Tensor x = test::random_tensor({3, 5, 7, 2}, dt, 101, -2, 2);
    for (const auto& [dims, pass] : dim_sets)
      for (bool keepdim : {false, true}) {
        RELPOS_INFO("{} dims {} keepdim {}", dtype_name(dt), shape_str(pass), keepdim);
        // Contiguous, strided, and a dense permutation (reduced in memory order, no copy).
        for (const Tensor& in : {x, test::strided_copy(x), x.permute({2, 0, 3, 1})})
          check_reductions(in, dims, pass, keepdim, rtol, atol);
      }
  }
}

TEST_CASE("reduce: large inputs take the threaded paths and still equal plain loops") {
  // Inner runs with many outputs, one total, rows accumulated over many or few outputs, wide
  // rows split by columns, and reductions over both outer and inner dims.
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{33, 4099}, {1}},    {{203, 1001}, {}},      {{4099, 33}, {0}},       {{3, 70001}, {0}},
      {{2, 9001, 17}, {1}}, {{50, 301, 7}, {0, 2}}, {{300, 3, 600}, {0, 2}}, {{7, 5, 3000}, {1}}};
  for (const auto& [shape, dims] : cases) {
    RELPOS_INFO("{} dims {}", shape_str(shape), shape_str(dims));
    const Tensor x = test::random_tensor(shape, DType::f32, 111, -2, 2);
    check_reductions(x, dims, dims, false, 2e-6, 1e-5);  // as above; sums of 1e5 terms: atol
  }
}

TEST_CASE("sum: f32 accumulates in double; integers sum exactly to i64") {
  std::vector<float> v(1001, 1.f);
  v[0] = 16777216.f;  // 2^24: adding 1 in f32 arithmetic is lost
  CHECK(sum(Tensor::from_vector(v, {1001})).item() == 16778216.0);
  CHECK(sum(Tensor::from_vector(v, {7, 143}), {0, 1}).item() == 16778216.0);

  const Tensor xi = Tensor::from_vector<int32_t>({2000000000, 2000000000, -7, 5, 1, 2}, {3, 2});
  CHECK(sum(xi).dtype() == DType::i64);
  CHECK(sum(xi).item() == 4000000001.0);
  CHECK(sum(xi, {1}).to_vector<int64_t>() == std::vector<int64_t>{4000000000, -2, 3});
  CHECK(sum(test::strided_copy(xi), {0}).to_vector<int64_t>() ==
        std::vector<int64_t>{1999999994, 2000000007});
  const Tensor mask = cast(test::random_indices({301, 257}, 2, 121), DType::u8);
  int64_t ones_count = 0;
  for (uint8_t m : mask.to_vector<uint8_t>()) ones_count += m;
  CHECK(sum(mask).item() == static_cast<double>(ones_count));
  CHECK(max(xi, {0}).to_vector<int64_t>() == std::vector<int64_t>{2000000000, 2000000000});
}

TEST_CASE("logsumexp: stable for large values; -inf rows give -inf; +inf and NaN propagate") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> rows = {1000,  1000, 1000,  -1000, -1000, -1000, -kInf, -kInf, -kInf,
                                    -kInf, 0,    -kInf, kInf,  1,     2,     nan,   1,     2};
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    const Tensor x = cast(Tensor::from_vector(rows, {6, 3}), dt);
    const std::vector<double> y = logsumexp(x, {1}).to_vector<double>();
    CHECK(y[0] == doctest::Approx(1000 + std::log(3.0)).epsilon(1e-6));
    CHECK(y[1] == doctest::Approx(-1000 + std::log(3.0)).epsilon(1e-6));
    CHECK(y[2] == -kInf);
    CHECK(y[3] == doctest::Approx(0).epsilon(1e-7));
    CHECK(y[4] == kInf);
    CHECK(std::isnan(y[5]));
    const std::vector<double> m = max(x, {1}).to_vector<double>();
    CHECK(m[4] == kInf);
    CHECK(std::isnan(m[5]));  // max propagates NaN like torch.amax
    // The same over dim 0 (rows accumulated column-wise): a column of -inf gives -inf.
    const Tensor xt = x.transpose(0, 1).contiguous();  // [3, 6]
    CHECK(logsumexp(xt, {0}).to_vector<double>()[2] == -kInf);
  }
}

TEST_CASE("max/logsumexp: a NaN anywhere in a long row or column wins (vectorized loops)") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t at : {0, 517, 999}) {
    INFO("NaN at " << at);
    const Tensor x = test::random_tensor({3, 1000}, DType::f32, 123);
    copy_(x.slice(0, 1, 2).slice(1, at, at + 1), Tensor::scalar(nan));
    const Tensor xt = x.transpose(0, 1).contiguous();  // [1000, 3]: reduced over rows
    for (const Tensor& y : {max(x, {1}), logsumexp(x, {1}), max(xt, {0}), logsumexp(xt, {0})}) {
      const std::vector<double> v = y.to_vector<double>();
      CHECK(std::isfinite(v[0]));
      CHECK(std::isnan(v[1]));
      CHECK(std::isfinite(v[2]));
    }
  }
}

TEST_CASE("reduce: empty reductions give sum 0, mean NaN, logsumexp -inf; max is an error") {
  const Tensor x = zeros({3, 0});
  CHECK(sum(x, {1}).to_vector<double>() == std::vector<double>{0, 0, 0});
  CHECK(std::isnan(mean(x, {1}).to_vector<double>()[0]));
  CHECK(logsumexp(x, {1}).to_vector<double>() == std::vector<double>{-kInf, -kInf, -kInf});
  CHECK_THROWS_WITH_AS(max(x, {1}), doctest::Contains("[max] cannot take the max of an empty"),
                       Error);
  CHECK(max(x, {0}).shape() == Shape{0});  // nothing to reduce per output, no outputs
  CHECK(sum(Tensor::scalar(2.5)).item() == 2.5);
}

TEST_CASE("argmax: index of the first maximum along each dim, i64, keepdim, strided, NaN") {
  for (DType dt : {DType::f32, DType::f64, DType::i64}) {
    // Values in {0, 1, 2}: ties are everywhere, so "first" matters.
    const Tensor x = cast(test::random_indices({4, 5, 6}, 3, 131), dt);
    const std::vector<double> v = x.to_vector<double>();
    for (int64_t dim : {0, 1, 2, -1}) {
      INFO(dtype_name(dt) << " dim " << dim);
      const int d = dim < 0 ? dim + 3 : static_cast<int>(dim);
      const Shape& s = x.shape();
      Shape out_shape = s;
      out_shape[d] = 1;
      const int64_t inner = d == 2 ? 1 : (d == 1 ? 6 : 30), K = s[d];
      std::vector<int64_t> want;
      for (int64_t o = 0; o < shape_numel(out_shape); ++o) {
        const int64_t base = o / inner * K * inner + o % inner;
        int64_t best = 0;
        for (int64_t k = 1; k < K; ++k)
          if (v[base + k * inner] > v[base + best * inner]) best = k;
        want.push_back(best);
      }
      const Tensor a = argmax(x, dim);
      CHECK(a.dtype() == DType::i64);
      CHECK(a.to_vector<int64_t>() == want);
      CHECK(argmax(test::strided_copy(x), dim, true).shape() == out_shape);
      CHECK(argmax(test::strided_copy(x), dim, true).to_vector<int64_t>() == want);
    }
  }
  // Large rows (threaded) and a transposed view, against std::max_element (the first maximum).
  const Tensor big = test::random_tensor({3, 20001}, DType::f32, 132);
  const std::vector<double> bv = big.to_vector<double>();
  std::vector<int64_t> want_rows;
  for (int r = 0; r < 3; ++r)
    want_rows.push_back(std::max_element(bv.begin() + r * 20001, bv.begin() + (r + 1) * 20001) -
                        (bv.begin() + r * 20001));
  CHECK(argmax(big, 1).to_vector<int64_t>() == want_rows);
  CHECK(argmax(big.transpose(0, 1), 0).to_vector<int64_t>() == want_rows);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(argmax(Tensor::from_vector<double>({1, nan, 5, nan}, {4}), 0).item() == 1);
}

TEST_CASE("reduce: errors name the op (duplicate or out-of-range dims, dtypes, empty argmax)") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(sum(x, {1, -1}), doctest::Contains("[sum] dims [1, -1] name a dim twice"),
                       Error);
  CHECK_THROWS_WITH_AS(max(x, {2}), doctest::Contains("[max] dim 2 is out of range"), Error);
  CHECK_THROWS_WITH_AS(mean(zeros({2}, DType::i64)), doctest::Contains("[mean]"), Error);
  CHECK_THROWS_WITH_AS(logsumexp(zeros({2}, DType::i32)), doctest::Contains("[logsumexp]"), Error);
  CHECK_THROWS_WITH_AS(argmax(zeros({2, 0}), 1), doctest::Contains("[argmax] dim 1"), Error);
  CHECK_THROWS_WITH_AS(argmax(x, -3), doctest::Contains("[argmax]"), Error);
  CHECK_THROWS_WITH_AS(sum(Tensor()), doctest::Contains("[sum]"), Error);
}

TEST_CASE("reduce: CUDA matches CPU for sum, mean, max, logsumexp and argmax") {
  const Tensor x = test::random_tensor({6, 33, 5}, DType::f32, 141, -3, 3);
  using V = std::vector<Tensor>;
  test::check_cuda_matches_cpu("sum", [](const V& in) { return V{sum(in[0], {0, 2})}; }, {x});
  test::check_cuda_matches_cpu("mean", [](const V& in) { return V{mean(in[0], {1})}; }, {x});
  test::check_cuda_matches_cpu("max", [](const V& in) { return V{max(in[0], {2})}; }, {x});
  test::check_cuda_matches_cpu("logsumexp", [](const V& in) { return V{logsumexp(in[0], {-1})}; },
                               {x});
  test::check_cuda_matches_cpu(
      "argmax", [](const V& in) { return V{argmax(in[0], 1)}; }, {x}, 0, 1e-30);
}

TEST_CASE(
    "reduce: CUDA matches CPU on long, split, many and strided rows and on columns, f32/f64") {
  // Rows split over blocks ([3, 100000], [1000003] whole), many short rows (a warp each), long
  // rows (a block each), leading dims reduced as columns ([8192, 256] -> [256], split over row
  // chunks; [4099, 33]), a middle dim ([2, 9001, 17]), several reduced groups ([50, 301, 7] over
  // {0, 2}: permuted first), a reduced dim of size 1 ([9000, 1, 3] over {1}), all dims.
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3, 100000}, {1}},     {{1000003}, {}},         {{5000, 37}, {1}},   {{37, 5000}, {1}},
      {{8192, 256}, {0}},     {{4099, 33}, {0}},       {{3, 70001}, {0}},   {{2, 9001, 17}, {1}},
      {{50, 301, 7}, {0, 2}}, {{300, 3, 600}, {0, 2}}, {{7, 5, 3000}, {1}}, {{9000, 1, 3}, {1}},
      {{6, 5, 4, 3}, {}}};
  using V = std::vector<Tensor>;
  for (DType dt : {DType::f32, DType::f64})
    for (const auto& [shape, dims] : cases) {
      RELPOS_INFO("{} {} dims {}", dtype_name(dt), shape_str(shape), shape_str(dims));
      const Tensor x = test::random_tensor(shape, dt, 161, -3, 3);
      // Both backends sum in f64 and differ only in the order of the additions, so f32 results
      // are within an ulp or two (rtol 2e-6); atol covers sums that cancel to near 0. logsumexp
      // adds each backend's f32 exp error (<= 2 ulp per term). f64: rounding of 1e6 terms.
      const double rtol = dt == DType::f32 ? 2e-6 : 1e-11, atol = dt == DType::f32 ? 1e-5 : 1e-9;
      const auto d = dims;
      for (bool strided : {false, true}) {
        auto sums = [d, strided](const V& in) {
          const Tensor xs = strided ? test::strided_copy(in[0]) : in[0];
          return V{sum(xs, d), mean(xs, d, true), logsumexp(xs, d, true)};
        };
        test::check_cuda_matches_cpu("sum, mean, logsumexp", sums, {x}, rtol, atol);
        auto maxima = [d, strided](const V& in) {  // selections: exact
          const Tensor xs = strided ? test::strided_copy(in[0]) : in[0];
          return V{max(xs, d, true)};
        };
        test::check_cuda_matches_cpu("max", maxima, {x}, 0, 1e-300);
      }
    }
}

TEST_CASE("reduce: CUDA matches CPU exactly for integer sums (to i64) and integer max") {
  using V = std::vector<Tensor>;
  const Tensor xi = cast(test::random_indices({3001, 67}, 2000000000, 171), DType::i32);
  const Tensor mask = cast(test::random_indices({3001, 67}, 2, 172), DType::u8);
  const Tensor xl = test::random_indices({50001, 3}, 1000000, 173);  // i64
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {1}, {}}) {
    INFO("dims " << shape_str(dims));
    test::check_cuda_matches_cpu(
        "integer sums and max",
        [dims](const V& in) {
          return V{sum(in[0], dims), max(in[0], dims), sum(in[1], dims),
                   sum(in[2], dims), max(in[2], dims), sum(test::strided_copy(in[0]), dims)};
        },
        {xi, mask, xl}, 0, 1e-300);
  }
}

TEST_CASE("argmax: CUDA matches CPU exactly: ties pick the first index, NaN wins, every layout") {
  using V = std::vector<Tensor>;
  // Values in {0, 1, 2}: ties everywhere. Rows (a warp, a block, split into chunks), columns
  // (split too), a middle dim, strided.
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{3, 20001}, 1}, {{3, 20001}, 0},    {{1, 200003}, 1}, {{4099, 33}, 0},
      {{5000, 37}, 1}, {{2, 9001, 17}, 1}, {{4, 5, 6}, -1},  {{7, 1, 3}, 1}};
  for (DType dt : {DType::f32, DType::f64, DType::i64, DType::u8})
    for (const auto& [shape, dim] : cases) {
      RELPOS_INFO("{} {} dim {}", dtype_name(dt), shape_str(shape), dim);
      const Tensor x = cast(test::random_indices(shape, 3, 181), dt);
      const int64_t d = dim;
      test::check_cuda_matches_cpu(
          "argmax",
          [d](const V& in) {
            return V{argmax(in[0], d), argmax(test::strided_copy(in[0]), d, true)};
          },
          {x}, 0, 1e-300);
    }
  // NaNs late in a long row and in a long column: the first NaN is the answer on both backends.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = test::random_tensor({3, 50001}, DType::f32, 182);
  for (int64_t at : {40000, 45000, 50000})
    copy_(x.slice(0, 1, 2).slice(1, at, at + 1), Tensor::scalar(nan));
  CHECK(argmax(x, 1).to_vector<int64_t>()[1] == 40000);
  test::check_cuda_matches_cpu(
      "argmax with NaN",
      [](const V& in) {
        return V{argmax(in[0], 1), argmax(in[0].transpose(0, 1).contiguous(), 0), max(in[0], {1})};
      },
      {x}, 0, 1e-300);
  test::check_cuda_matches_cpu(  // NaN in row 1 only; f32 exp differs by <= 2 ulp per term
      "logsumexp with NaN", [](const V& in) { return V{logsumexp(in[0], {1})}; }, {x}, 2e-6, 1e-5);
}

TEST_CASE("reduce: CUDA matches CPU on special values (+-1000, -inf rows, +inf, NaN) and empties") {
  using V = std::vector<Tensor>;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> rows = {1000,  1000, 1000,  -1000, -1000, -1000, -kInf, -kInf, -kInf,
                                    -kInf, 0,    -kInf, kInf,  1,     2,     nan,   1,     2};
  for (DType dt : {DType::f32, DType::f64}) {
    INFO("dtype " << dtype_name(dt));
    const Tensor x = cast(Tensor::from_vector(rows, {6, 3}), dt);
    // Rows and, transposed, columns; f32 exp differs by <= 2 ulp on the two backends.
    test::check_cuda_matches_cpu(
        "special values",
        [](const V& in) {
          const Tensor xt = in[0].transpose(0, 1).contiguous();
          return V{logsumexp(in[0], {1}), max(in[0], {1}), sum(in[0], {1}),
                   logsumexp(xt, {0}),    max(xt, {0}),    sum(xt, {0})};
        },
        {x}, 2e-6, 1e-5);
  }
  test::check_cuda_matches_cpu(
      "empty reductions",
      [](const V& in) {
        return V{sum(in[0], {1}), logsumexp(in[0], {1}), sum(in[0], {0}), max(in[0], {0})};
      },
      {zeros({3, 0})}, 0, 1e-300);
}

TEST_CASE("sum_of_squares: equals the sum of every tensor's squares in f64, CUDA matches CPU") {
  // Mixed f32/f64, odd sizes, one tensor of several CPU chunks (65536) and more tensors than one
  // CUDA launch takes (32), a strided view, values large enough that f32 squares would overflow.
  std::vector<Tensor> xs;
  for (int i = 0; i < 37; ++i)
    xs.push_back(test::random_tensor({i % 5 + 1, 2 * i + 3}, i % 3 ? DType::f32 : DType::f64,
                                     600 + i, -2, 2));
  xs.push_back(test::random_tensor({3, 65536 + 7}, DType::f32, 700, -1, 1));
  xs.push_back(test::strided_copy(test::random_tensor({9, 11}, DType::f64, 701)));
  xs.push_back(mul_scalar(test::random_tensor({5}, DType::f32, 702), 1e30));
  double expected = 0;
  for (const Tensor& x : xs)
    for (double v : x.to_vector<double>()) expected += v * v;
  const Tensor got = sum_of_squares(xs);
  CHECK(got.dim() == 0);
  CHECK(got.dtype() == DType::f64);
  CHECK(got.item() == doctest::Approx(expected).epsilon(1e-13));
  CHECK(sum_of_squares(xs).item() == got.item());  // the same bits again
  CHECK(sum_of_squares({zeros({0})}).item() == 0);
  CHECK(std::isinf(sum_of_squares({full({2}, 1e200, DType::f64)}).item()));
  CHECK(std::isnan(sum_of_squares({full({2}, std::nan(""))}).item()));
  CHECK(test::error_of([] { sum_of_squares({}); }).find("at least one tensor") !=
        std::string::npos);
  CHECK(test::error_of([] {
          sum_of_squares({zeros({2}, DType::i64)});
        }).find("expects a floating tensor") != std::string::npos);
  using V = std::vector<Tensor>;
  test::check_cuda_matches_cpu(
      "sum_of_squares", [](const V& in) { return V{sum_of_squares(in)}; }, xs, 1e-13, 0);
}
