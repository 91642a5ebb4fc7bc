// rfft / irfft against the direct O(n^2) DFT sums in double: odd and even n, padding and
// truncation, batch dims, strided inputs, round trips, f32 and f64, and the errors.
#include <omp.h>

#include <array>
#include <cmath>
#include <numbers>

#include "tests/harness.h"

using namespace relpos;

namespace {

// cos and sin of 2 pi t / n for t in [0, n): exact-index twiddles for the direct sums.
struct Twiddles {
  std::vector<double> c, s;
  explicit Twiddles(int64_t n) : c(n), s(n) {
    for (int64_t t = 0; t < n; ++t) {
      c[t] = std::cos(2 * std::numbers::pi * double(t) / double(n));
      s[t] = std::sin(2 * std::numbers::pi * double(t) / double(n));
    }
  }
};

// X_k = sum_{j < min(L, n)} x_j e^{-2 pi i jk/n}, k <= n/2: x [..., L] -> [..., n/2+1, 2].
Tensor naive_rfft(const Tensor& x, int64_t n) {
  const int64_t len = x.size(-1), rows = x.numel() / std::max<int64_t>(len, 1), h = n / 2 + 1;
  const std::vector<double> xv = x.to_vector<double>();
  const Twiddles w(n);
  std::vector<double> out(static_cast<size_t>(rows * h * 2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < h; ++k) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < std::min(len, n); ++j) {
        const int64_t t = (j * k) % n;
        re += xv[r * len + j] * w.c[t];
        im -= xv[r * len + j] * w.s[t];
      }
      out[(r * h + k) * 2] = re;
      out[(r * h + k) * 2 + 1] = im;
    }
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  shape.push_back(h);
  shape.push_back(2);
  return Tensor::from_vector(out, shape);
}

// x_j = (1/n) sum_{k=0}^{n-1} X_k e^{2 pi i jk/n} with X_{n-k} = conj(X_k), from bins k <= n/2
// (missing bins are 0; the imaginary parts of bin 0 and, n even, bin n/2 drop out).
Tensor naive_irfft(const Tensor& X, int64_t n) {
  const int64_t m = X.size(-2), rows = X.numel() / std::max<int64_t>(2 * m, 1);
  const std::vector<double> xv = X.to_vector<double>();
  const Twiddles w(n);
  std::vector<double> out(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t bin = k <= n / 2 ? k : n - k;  // X_k = conj(X_{n-k}) above n/2
        if (bin >= m) continue;
        const double re = xv[(r * m + bin) * 2];
        const double im = (k == 0 || 2 * k == n) ? 0.0 : xv[(r * m + bin) * 2 + 1];
        const int64_t t = (j * k) % n;  // Re((re + i im') e^{i theta}), im' = +-im
        s += re * w.c[t] - (k <= n / 2 ? im : -im) * w.s[t];
      }
      out[r * n + j] = s / double(n);
    }
  Shape shape(X.shape().begin(), X.shape().end() - 2);
  shape.push_back(n);
  return Tensor::from_vector(out, shape);
}

// The direct sums run in double over at most ~1000 terms of size <= 1; FFTW's error is
// ~log2(n) eps sum|x|, so 1e-4 absolute covers f32 (eps 6e-8) and 1e-10 covers f64.
double atol(DType dtype) {
  return dtype == DType::f32 ? 1e-4 : 1e-10;
}

const std::array<DType, 2> kFloating = {DType::f32, DType::f64};

}  // namespace

TEST_CASE("rfft: matches the direct DFT for odd and even n, padded and truncated") {
  for (DType dtype : kFloating)
    for (int64_t len : {1, 2, 7, 16, 33})
      for (int64_t n : {int64_t(-1), len + 4, len + 5, len - 1, len / 2}) {
        if (n == 0) continue;
        const int64_t used = n == -1 ? len : n;
        INFO("dtype " << dtype_name(dtype) << " L " << len << " n " << n);
        const Tensor x = test::random_tensor({2, 3, len}, dtype, 100 + len);
        const Tensor out = rfft(x, n);
        CHECK(out.shape() == Shape{2, 3, used / 2 + 1, 2});
        CHECK_CLOSE(out, naive_rfft(x, used), 1e-6, atol(dtype));
        CHECK_CLOSE(rfft(test::strided_copy(x), n), naive_rfft(x, used), 1e-6, atol(dtype));
      }
}

TEST_CASE("rfft: many rows split over threads still match the direct DFT") {
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor x = test::random_tensor({37, 1001}, dtype, 7);  // 37 rows: uneven chunks
    CHECK_CLOSE(rfft(x), naive_rfft(x, 1001), 1e-6, atol(dtype));
    CHECK_CLOSE(irfft(rfft(x, 1000), 1000), x.slice(1, 0, 1000), 1e-5, atol(dtype));
    // A contiguous view one element into its buffer: rows FFTW sees at another alignment.
    const Tensor shifted = x.view({-1}).slice(0, 1, 1 + 36 * 1000).view({36, 1000});
    CHECK(shifted.is_contiguous());
    CHECK_CLOSE(rfft(shifted), naive_rfft(shifted, 1000), 1e-6, atol(dtype));
  }
}

TEST_CASE("irfft: matches the direct inverse, ignoring DC/Nyquist imaginary parts") {
  for (DType dtype : kFloating)
    for (int64_t m : {1, 4, 9})
      for (int64_t n : {int64_t(-1), int64_t(1), int64_t(6), int64_t(7), 2 * m + 3}) {
        if (n == -1 && m == 1) continue;  // n = 0: an error, tested below
        const int64_t used = n == -1 ? 2 * (m - 1) : n;
        INFO("dtype " << dtype_name(dtype) << " M " << m << " n " << n);
        // Arbitrary spectra (not Hermitian-consistent): the inverse formula is still defined.
        const Tensor X = test::random_tensor({3, m, 2}, dtype, 200 + m);
        const Tensor out = irfft(X, n);
        CHECK(out.shape() == Shape{3, used});
        CHECK_CLOSE(out, naive_irfft(X, used), 1e-6, atol(dtype));
        CHECK_CLOSE(irfft(test::strided_copy(X), n), naive_irfft(X, used), 1e-6, atol(dtype));
      }
}

TEST_CASE("rfft/irfft: irfft(rfft(x, n), n) returns x padded or truncated to n") {
  for (DType dtype : kFloating)
    for (int64_t n : {5, 8, 13, 24}) {
      INFO("dtype " << dtype_name(dtype) << " n " << n);
      const Tensor x = test::random_tensor({4, 11}, dtype, 300 + n);
      const Tensor back = irfft(rfft(x, n), n);
      Tensor want = zeros({4, n}, dtype);  // x truncated or zero-padded to n
      copy_(want.slice(1, 0, std::min<int64_t>(n, 11)), x.slice(1, 0, n));
      CHECK_CLOSE(back, want, 1e-5, atol(dtype));
    }
}

TEST_CASE("rfft/irfft: empty batches and zero-length inputs with explicit n") {
  CHECK(rfft(zeros({0, 8})).shape() == Shape{0, 5, 2});
  CHECK(irfft(zeros({0, 5, 2})).shape() == Shape{0, 8});
  const Tensor z = rfft(zeros({2, 0}, DType::f64), 4);  // all padding
  CHECK(z.to_vector<double>() == std::vector<double>(12, 0.0));
  CHECK(irfft(zeros({2, 0, 2}), 3).to_vector<float>() == std::vector<float>(6, 0.0f));
}

TEST_CASE("rfft/irfft: bad lengths, dtypes and shapes throw naming the op") {
  CHECK_THROWS_WITH_AS(rfft(zeros({3, 4}, DType::i64)), doctest::Contains("[rfft]"), Error);
  CHECK_THROWS_WITH_AS(rfft(zeros({3, 4}), 0), doctest::Contains("[rfft]"), Error);
  CHECK_THROWS_WITH_AS(rfft(zeros({3, 0})), doctest::Contains("[rfft]"), Error);
  CHECK_THROWS_WITH_AS(rfft(Tensor::scalar(1.0)), doctest::Contains("[rfft]"), Error);
  CHECK_THROWS_WITH_AS(irfft(zeros({3, 4})), doctest::Contains("[irfft]"), Error);
  CHECK_THROWS_WITH_AS(irfft(zeros({2})), doctest::Contains("[irfft]"), Error);
  CHECK_THROWS_WITH_AS(irfft(zeros({3, 1, 2})), doctest::Contains("[irfft]"), Error);
  CHECK_THROWS_WITH_AS(irfft(zeros({3, 4, 2}, DType::i32)), doctest::Contains("[irfft]"), Error);
}

TEST_CASE("rfft/irfft: CUDA matches CPU") {
  const Tensor x = test::random_tensor({3, 2, 37}, DType::f32, 400);
  test::check_cuda_matches_cpu(
      "rfft, irfft",
      [](const std::vector<Tensor>& in) {
        return std::vector{rfft(in[0], 40), irfft(rfft(in[0]), 37)};
      },
      {x}, 1e-4, 1e-4);
}

TEST_CASE("rfft/irfft: CUDA matches CPU for odd, even, prime and large n, f32 and f64") {
  // cuFFT and FFTW round differently; both are within ~eps log2(n) ||row||_2 of the exact
  // transform. Rows in [-1, 1] of up to 8192 samples have ||row|| <= 91, so spectra get atol
  // 1e-3 (f32) / 1e-11 (f64) and the inverse (values ~1, the spectrum's error over n) 1e-5 /
  // 1e-13 relative to ~1 — with rtol 1e-5 (f32) / 1e-12 (f64) for the largest bins.
  for (DType dtype : kFloating)
    for (int64_t n : {1, 2, 5, 37, 40, 1001, 4099, 8192}) {
      INFO("dtype " << dtype_name(dtype) << " n " << n);
      const bool f32 = dtype == DType::f32;
      const Tensor x = test::random_tensor({3, 5, n}, dtype, 500 + n);
      test::check_cuda_matches_cpu(
          "rfft", [n](const std::vector<Tensor>& in) { return std::vector{rfft(in[0], n)}; }, {x},
          f32 ? 1e-5 : 1e-12, f32 ? 1e-3 : 1e-11);
      // Arbitrary spectra: the imaginary parts of bin 0 (and bin n/2, n even) must be ignored.
      const Tensor X = test::random_tensor({3, 5, n / 2 + 1, 2}, dtype, 600 + n);
      test::check_cuda_matches_cpu(
          "irfft", [n](const std::vector<Tensor>& in) { return std::vector{irfft(in[0], n)}; }, {X},
          f32 ? 1e-5 : 1e-12, f32 ? 1e-5 : 1e-13);
    }
}

TEST_CASE("rfft/irfft: CUDA matches CPU for many rows, padding, truncation and strided inputs") {
  for (DType dtype : kFloating) {
    INFO("dtype " << dtype_name(dtype));
    const bool f32 = dtype == DType::f32;
    const double rtol = f32 ? 1e-5 : 1e-12, atol = f32 ? 1e-3 : 1e-11;  // as above
    // [64, 8192] (the benchmark's shape) and 3000 short rows; each shape planned once, then
    // served from the plan cache on the second call.
    test::check_cuda_matches_cpu(
        "rfft over many rows, twice",
        [](const std::vector<Tensor>& in) {
          return std::vector{rfft(in[0]), rfft(in[0]), rfft(in[1]), irfft(rfft(in[1]), 37)};
        },
        {test::random_tensor({64, 8192}, dtype, 700), test::random_tensor({3000, 37}, dtype, 701)},
        rtol, atol);
    test::check_cuda_matches_cpu(
        "rfft/irfft of padded, truncated, strided and misaligned inputs",
        [](const std::vector<Tensor>& in) {
          // A contiguous view one element into its buffer: cuFFT needs complex-aligned data.
          const Tensor shifted = in[0].view({-1}).slice(0, 1, 1 + 36 * 1000).view({36, 1000});
          return std::vector{rfft(in[0], 1010),
                             rfft(in[0], 999),
                             rfft(test::strided_copy(in[0])),
                             rfft(shifted),
                             irfft(in[1], 30),
                             irfft(in[1], 9),
                             irfft(test::strided_copy(in[1])),
                             irfft(in[1].slice(1, 1, 13), 24)};
        },
        {test::random_tensor({37, 1001}, dtype, 702), test::random_tensor({4, 13, 2}, dtype, 703)},
        rtol, atol);
  }
}

TEST_CASE("rfft/irfft: CUDA round trip returns x, and CUDA errors name the op") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): CUDA rfft/irfft round trip and errors");
    return;
  }
  const Device gpu = Device::cuda(0);
  for (int64_t n : {6, 7, 4096}) {
    INFO("n " << n);
    const Tensor x = test::random_tensor({9, n}, DType::f32, 800 + n);
    // Round trip in f32: ~eps log2(n) relative to |x| ~ 1.
    CHECK_CLOSE(irfft(rfft(x.to(gpu)), n).to(Device::cpu()), x, 1e-5, 1e-5);
  }
  CHECK(rfft(zeros({0, 8}, DType::f32, gpu)).shape() == Shape{0, 5, 2});
  CHECK(irfft(zeros({0, 5, 2}, DType::f32, gpu)).shape() == Shape{0, 8});
  CHECK_THROWS_WITH_AS(rfft(zeros({3, 4}, DType::i64, gpu)), doctest::Contains("[rfft]"), Error);
  CHECK_THROWS_WITH_AS(irfft(zeros({3, 4}, DType::f32, gpu)), doctest::Contains("[irfft]"), Error);
}

TEST_CASE("rfft/irfft: the same bits at 1, 2 and 3 threads (rows are chunked by shape only)") {
  const int before = omp_get_max_threads();
  for (DType dt : {DType::f32, DType::f64}) {
    const Tensor x = test::random_tensor({301, 257}, dt, 710);  // 77k samples: split in 8
    std::vector<std::vector<double>> spectra, signals;
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      const Tensor X = rfft(x, 512);
      spectra.push_back(X.to_vector<double>());
      signals.push_back(irfft(X, 512).to_vector<double>());
    }
    CHECK(spectra[0] == spectra[1]);
    CHECK(spectra[0] == spectra[2]);
    CHECK(signals[0] == signals[1]);
    CHECK(signals[0] == signals[2]);
  }
  omp_set_num_threads(before);
}
