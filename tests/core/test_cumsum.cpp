// cumsum against a naive loop: every dim, both directions, strided views, integer dtypes,
// long scans (tiles and threads), f32 accumulating in double, and the errors.
#include <array>
#include <cmath>

#include "tests/harness.h"

using namespace relpos;

namespace {

// Inclusive prefix (or suffix, reverse) sums of x along dim, in double.
Tensor naive_cumsum(const Tensor& x, int dim, bool reverse) {
  const std::vector<double> v = x.to_vector<double>();
  const int64_t len = x.size(dim);
  int64_t inner = 1;
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t outer = x.numel() / std::max<int64_t>(len * inner, 1);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t t = 0; t < len; ++t) {
        const int64_t j = reverse ? len - 1 - t : t;
        const int64_t at = (o * len + j) * inner + i;
        acc += v[at];
        out[at] = acc;
      }
    }
  return Tensor::from_vector(out, x.shape());
}

const std::array<DType, 2> kFloating = {DType::f32, DType::f64};

// Sums of <= 7 values in [-1, 1] rounded once to the dtype: f32 within 1e-6 absolute.
double atol(DType dtype) {
  return dtype == DType::f32 ? 1e-6 : 1e-13;
}

}  // namespace

TEST_CASE("cumsum: prefix and suffix sums match the naive loop on every dim, strided inputs") {
  for (DType dtype : kFloating)
    for (bool reverse : {false, true})
      for (int dim : {0, 1, 2}) {
        INFO("dtype " << dtype_name(dtype) << " dim " << dim << " reverse " << reverse);
        const Tensor x = test::random_tensor({5, 7, 3}, dtype, 10 + dim);
        const Tensor want = naive_cumsum(x, dim, reverse);
        const Tensor out = cumsum(x, dim, reverse);
        CHECK(out.shape() == x.shape());
        CHECK(out.dtype() == dtype);
        CHECK_CLOSE(out, want, 0, atol(dtype));
        CHECK_CLOSE(cumsum(test::strided_copy(x), dim, reverse), want, 0, atol(dtype));
        CHECK_CLOSE(cumsum(x, dim - 3, reverse), want, 0, atol(dtype));  // negative dim
      }
}

TEST_CASE("cumsum: the middle dim of a stepped, permuted view") {
  for (DType dtype : kFloating)
    for (bool reverse : {false, true}) {
      INFO("dtype " << dtype_name(dtype) << " reverse " << reverse);
      // big: [6, 15, 9] -> view [9, 7, 3]: every other row of dim 1, a step of 3 in dim 2, and
      // the outer dims swapped.
      const Tensor big = test::random_tensor({6, 15, 9}, dtype, 20);
      const Tensor x = big.slice(1, 1, 15, 2).slice(2, 0, 9, 3).transpose(0, 2);
      CHECK_FALSE(x.is_contiguous());
      CHECK_CLOSE(cumsum(x, 1, reverse), naive_cumsum(x.contiguous(), 1, reverse), 0, atol(dtype));
    }
}

TEST_CASE("cumsum: integer dtypes sum exactly") {
  for (DType dtype : {DType::i32, DType::i64})
    for (bool reverse : {false, true}) {
      const Tensor x = test::random_indices({4, 9, 5}, 1000, 30, dtype);
      const Tensor out = cumsum(test::strided_copy(x), 1, reverse);
      CHECK(out.dtype() == dtype);
      CHECK(out.to_vector<double>() == naive_cumsum(x, 1, reverse).to_vector<double>());
    }
}

TEST_CASE("cumsum: long scans and many positions (tiles, threads) match the naive loop") {
  for (DType dtype : kFloating)
    for (bool reverse : {false, true}) {
      INFO("dtype " << dtype_name(dtype) << " reverse " << reverse);
      // 40001 positions adjacent in memory (tiled sweep) and 40001 positions scanned one by one.
      const Tensor a = test::random_tensor({5, 40001}, dtype, 40);
      CHECK_CLOSE(cumsum(a, 0, reverse), naive_cumsum(a, 0, reverse), 0, atol(dtype));
      const Tensor b = test::random_tensor({40001, 5}, dtype, 41);
      CHECK_CLOSE(cumsum(b, 1, reverse), naive_cumsum(b, 1, reverse), 0, atol(dtype));
      // One scan of 3001 values: the partial sums grow to ~30, f32 keeps ~2e-6 of that.
      const Tensor c = test::random_tensor({3001}, dtype, 42);
      CHECK_CLOSE(cumsum(c, 0, reverse), naive_cumsum(c, 0, reverse), 1e-6, atol(dtype));
    }
}

TEST_CASE("cumsum: f32 accumulates in double, so each sum is rounded once") {
  // 100000 copies of 0.1f: a float accumulator drifts by ~1e-4 relative; a double one gives
  // the exact sum rounded to f32 (relative error <= 2^-24).
  const Tensor x = full({100000}, 0.1, DType::f32);
  const std::vector<float> out = cumsum(x, 0).to_vector<float>();
  const double tenth = static_cast<double>(0.1f);
  for (int64_t i : {int64_t(999), int64_t(49999), int64_t(99999)}) {
    const double exact = tenth * double(i + 1);
    CHECK(std::abs(out[i] - exact) <= exact * 6e-8);
  }
}

TEST_CASE("cumsum: 0-dim, length-1 and empty tensors") {
  CHECK(cumsum(Tensor::scalar(2.5), 0).item() == 2.5);
  CHECK(cumsum(Tensor::scalar(2.5), -1).item() == 2.5);
  const Tensor one = test::random_tensor({3, 1, 4}, DType::f64, 50);
  CHECK(cumsum(one, 1, true).to_vector<double>() == one.to_vector<double>());
  CHECK(cumsum(zeros({3, 0, 4}), 1).shape() == Shape{3, 0, 4});
  CHECK(cumsum(zeros({3, 0, 4}), 2).shape() == Shape{3, 0, 4});
}

TEST_CASE("cumsum: bad dims and dtypes throw naming the op") {
  CHECK_THROWS_WITH_AS(cumsum(zeros({3, 4}), 2), doctest::Contains("[cumsum]"), Error);
  CHECK_THROWS_WITH_AS(cumsum(zeros({3, 4}), -3), doctest::Contains("[cumsum]"), Error);
  CHECK_THROWS_WITH_AS(cumsum(zeros({3, 4}, DType::u8), 0), doctest::Contains("[cumsum]"), Error);
  CHECK_THROWS_WITH_AS(cumsum(Tensor(), 0), doctest::Contains("[cumsum]"), Error);
}

TEST_CASE("cumsum: CUDA matches CPU") {
  const Tensor x = test::random_tensor({5, 7, 3}, DType::f32, 60);
  test::check_cuda_matches_cpu(
      "cumsum",
      [](const std::vector<Tensor>& in) {
        return std::vector{cumsum(in[0], 1), cumsum(in[0], 0, true)};
      },
      {x}, 1e-5, 1e-5);
}

namespace {

// CPU and CUDA both accumulate f32 in double and round each sum once; only the order of the
// double additions differs (~sqrt(n) eps |partial sums| ~ 1e-11 for 2e5 terms), so results differ
// by at most one f32 ulp: rtol 1e-6, and atol 1e-9 for sums that cancel to near zero. f64: that
// order difference itself, ~1e-11 (atol 1e-10). Integers are exact.
double cuda_rtol(DType dtype) {
  return dtype == DType::f32 ? 1e-6 : dtype == DType::f64 ? 1e-12 : 0;
}
double cuda_atol(DType dtype) {
  return dtype == DType::f32 ? 1e-9 : dtype == DType::f64 ? 1e-10 : 0;
}

Tensor cumsum_input(const Shape& shape, DType dtype, uint64_t seed) {
  if (is_floating(dtype)) return test::random_tensor(shape, dtype, seed);
  return test::random_indices(shape, 1000, seed, dtype);
}

}  // namespace

TEST_CASE("cumsum: CUDA matches CPU on every dim, both directions, strided views, all dtypes") {
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64})
    for (bool reverse : {false, true})
      for (int dim : {0, 1, 2}) {
        INFO("dtype " << dtype_name(dtype) << " dim " << dim << " reverse " << reverse);
        test::check_cuda_matches_cpu(
            "cumsum of contiguous, strided and stepped-permuted views",
            [dim, reverse](const std::vector<Tensor>& in) {
              // in[1]: [6, 15, 9] -> [9, 7, 3]: stepped in two dims, outer dims swapped.
              const Tensor stepped = in[1].slice(1, 1, 15, 2).slice(2, 0, 9, 3).transpose(0, 2);
              return std::vector{cumsum(in[0], dim, reverse),
                                 cumsum(test::strided_copy(in[0]), dim, reverse),
                                 cumsum(stepped, dim, reverse), cumsum(in[2], dim - 3, reverse),
                                 cumsum(test::strided_copy(in[2]), dim, reverse)};
            },
            {cumsum_input({5, 7, 3}, dtype, 70), cumsum_input({6, 15, 9}, dtype, 71),
             cumsum_input({33, 300, 19}, dtype, 72)},
            cuda_rtol(dtype), cuda_atol(dtype));
      }
}

TEST_CASE("cumsum: CUDA matches CPU on lines longer than a block, short lines, many positions") {
  for (DType dtype : {DType::f32, DType::f64, DType::i64})
    for (bool reverse : {false, true}) {
      INFO("dtype " << dtype_name(dtype) << " reverse " << reverse);
      test::check_cuda_matches_cpu(
          "cumsum of long and short lines",
          [reverse](const std::vector<Tensor>& in) {
            return std::vector{
                cumsum(in[0], 1, reverse),                    // 5000: five 1024-element tiles
                cumsum(in[1], 0, reverse),                    // 100001 on one line
                cumsum(in[1].view({100001, 2}), 0, reverse),  // two lines of stride 2
                cumsum(in[2], 0, reverse),  // 300-long lines, 5000 adjacent positions
                cumsum(in[2], 1, reverse),  // 5000-long lines of 300 rows
                cumsum(in[3], 1, reverse),  // 40001 lines of 5 (a thread each)
                cumsum(in[3], 0, reverse),  // 5 lines of 40001, strided by 5
                cumsum(in[4], 1, reverse),  // 1000 lines of 200 (one partial tile)
                cumsum(in[4], 0, reverse),  // 200 lines of 1000 strided by 200
                cumsum(in[4].transpose(0, 1), 1, reverse)};  // the same, transposed
          },
          {cumsum_input({3, 5000}, dtype, 80), cumsum_input({200002}, dtype, 81),
           cumsum_input({300, 5000}, dtype, 82), cumsum_input({40001, 5}, dtype, 83),
           cumsum_input({1000, 200}, dtype, 84)},
          cuda_rtol(dtype), cuda_atol(dtype));
    }
}

TEST_CASE("cumsum: CUDA f32 accumulates in double, so each sum is rounded once") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA cumsum accumulator check");
    return;
  }
  // As on the CPU: a float accumulator (even a block scan's tree) drifts past 2^-24 over these 1e5
  // terms.
  for (bool reverse : {false, true}) {
    const Tensor x = full({100000}, 0.1, DType::f32, Device::cuda(0));
    const std::vector<float> out = cumsum(x, 0, reverse).to_vector<float>();
    const double tenth = static_cast<double>(0.1f);
    for (int64_t i : {int64_t(999), int64_t(49999), int64_t(99999)}) {
      const int64_t terms = reverse ? 100000 - i : i + 1;
      const double exact = tenth * double(terms);
      CHECK(std::abs(out[i] - exact) <= exact * 6e-8);
    }
  }
  CHECK(cumsum(zeros({3, 0, 4}, DType::f32, Device::cuda(0)), 1).shape() == Shape{3, 0, 4});
  CHECK_THROWS_WITH_AS(cumsum(zeros({3, 4}, DType::u8, Device::cuda(0)), 0),
                       doctest::Contains("[cumsum]"), Error);
}
