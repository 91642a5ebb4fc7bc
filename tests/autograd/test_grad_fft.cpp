// Gradchecks of rfft and irfft (autograd/functions/fft.cpp) for even and odd n, n above, equal to
// and below the input length (rfft) or the available bins (irfft); strided inputs, non-contiguous
// output gradients, and the exact zeros irfft's gradient must hold.
#include "tests/autograd/grad_checks.h"

using namespace relpos;
using test::check_grad;
using test::check_noncontiguous_grad;
using test::check_same;

namespace {
Tensor rnd(const Shape& s, uint64_t seed) {
  return test::random_tensor(s, DType::f64, seed);
}
}  // namespace

// Both transforms are linear, so central differences are exact up to rounding of
// L = sum(f(x) r) (~1e-15 * n * |x| / eps ~ 1e-9): the default gradcheck tolerances (atol 1e-6,
// rtol 1e-4) have a wide margin.

TEST_CASE("grad: rfft gradcheck for even and odd n, n > L, n = L, n < L") {
  // L odd (7) and even (6); n = -1 (= L), larger even/odd, smaller even/odd, and 1.
  const std::vector<std::pair<int64_t, std::vector<int64_t>>> cases = {
      {7, {-1, 7, 8, 11, 4, 5, 1}}, {6, {-1, 6, 9, 10, 3, 4, 2}}};
  for (const auto& [length, ns] : cases) {
    const Tensor x = rnd({3, length}, 20 + length);
    for (int64_t n : ns) {
      RELPOS_INFO("L {} n {}", length, n);
      const auto f = [n](const std::vector<Var>& v) { return rfft(v[0], n); };
      check_grad(f, {x});
      if (n != 1) check_noncontiguous_grad(f, {x});  // size-1 dim: strided_copy is contiguous
      check_same(f({Var(x)}).value(), rfft(x, n));
    }
  }
  // Non-contiguous input: a transposed view, batch dims in front.
  check_grad([](const std::vector<Var>& v) { return rfft(transpose(v[0], 0, 2), 9); },
             {rnd({7, 2, 3}, 30)});
}

TEST_CASE("grad: irfft gradcheck for even and odd n, with fewer and more bins than n/2 + 1") {
  // M = 5 bins. n = -1 (= 8, uses all 5); 9 uses 5; 7, 6 use 4 (one extra bin); 5, 4 use 3;
  // 12, 13 need 7 (two bins missing); 1 uses bin 0 only.
  const Tensor X = rnd({3, 5, 2}, 40);
  for (int64_t n : {-1, 8, 9, 7, 6, 5, 4, 12, 13, 1}) {
    INFO("n " << n);
    const auto f = [n](const std::vector<Var>& v) { return irfft(v[0], n); };
    check_grad(f, {X});
    if (n != 1) check_noncontiguous_grad(f, {X});  // size-1 dim: strided_copy is contiguous
    check_same(f({Var(X)}).value(), irfft(X, n));
  }
  // Non-contiguous input: the (re, im) pairs of a permuted buffer.
  check_grad(
      [](const std::vector<Var>& v) {
        return irfft(permute(v[0], {1, 2, 0}), 7);
      },
      {rnd({2, 3, 5}, 41)});
}

TEST_CASE("grad: irfft gradient is exactly 0 on ignored imaginary parts and unused bins") {
  const Tensor X = rnd({2, 6, 2}, 50);  // 6 bins
  for (int64_t n : {6, 7}) {            // 4 bins used; n = 6 also has a Nyquist bin (3)
    INFO("n " << n);
    Var v(X, true);
    irfft(v, n).backward(rnd({2, n}, 51));
    const Tensor g = v.grad();                                     // [2, 6, 2]
    CHECK(sum(abs(g.select(-2, 0).select(-1, 1))).item() == 0.0);  // Im of bin 0
    if (n % 2 == 0)
      CHECK(sum(abs(g.select(-2, n / 2).select(-1, 1))).item() == 0.0);
    else
      CHECK(sum(abs(g.select(-2, n / 2).select(-1, 1))).item() > 0.0);
    CHECK(sum(abs(g.slice(-2, 4, 6))).item() == 0.0);  // bins beyond n/2
    CHECK(sum(abs(g.select(-2, 1))).item() > 0.0);
  }
}

TEST_CASE("grad: irfft(rfft(x)) gradcheck, and its gradient is the projection back to x") {
  const Tensor x = rnd({4, 9}, 60);
  for (int64_t n : {9, 10, 16}) {  // n >= L: the round trip returns x zero-padded to n
    INFO("n " << n);
    const auto f = [n](const std::vector<Var>& v) { return irfft(rfft(v[0], n), n); };
    check_grad(f, {x});
    Var v(x, true);
    const Tensor g = rnd({4, n}, 61);
    f({v}).backward(g);
    CHECK_CLOSE(v.grad(), g.slice(-1, 0, 9), 1e-12, 1e-12);  // two FFTs of rounding
  }
}

TEST_CASE("grad: complex_mul gradcheck, a * b and a * conj(b), with broadcasting both ways") {
  // Bilinear, so central differences are exact up to rounding.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4, 2}, {3, 4, 2}}, {{2, 3, 5, 2}, {1, 3, 1, 2}}, {{5, 2}, {2, 1, 2}}};
  for (const auto& [sa, sb] : shapes)
    for (bool conj_b : {false, true}) {
      RELPOS_INFO("{} {} conj {}", shape_str(sa), shape_str(sb), conj_b);
      const auto f = [conj_b](const std::vector<Var>& v) {
        return complex_mul(v[0], v[1], conj_b);
      };
      const std::vector<Tensor> in = {rnd(sa, 60), rnd(sb, 61)};
      check_grad(f, in);
      check_noncontiguous_grad(f, in);
      check_same(f({Var(in[0]), Var(in[1])}).value(), complex_mul(in[0], in[1], conj_b));
    }
}
