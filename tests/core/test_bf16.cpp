// bf16, the storage dtype of mixed precision: the f32 -> bf16 rounding (nearest, ties to even)
// against its definition, casts from and to every dtype, fill and item, elementwise arithmetic
// (computed in f32, rounded once), matrix products with f32 accumulation, the refusals of the ops
// without a bf16 kernel, and CUDA = CPU.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "tests/harness.h"

using namespace relpos;
using test::same_bits;

namespace {

uint32_t bits_of(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, 4);
  return u;
}
float float_of(uint32_t u) {
  float x = 0;
  std::memcpy(&x, &u, 4);
  return x;
}

// The definition: of the two bf16 values around x (x's upper half, and the next one away from
// zero), the nearer; on a tie, the one whose last kept bit is 0. Distances in double are exact.
uint16_t nearest_even(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t low = u & 0xffff0000u, high = low + 0x10000u;
  const double d_low = std::fabs(static_cast<double>(x) - float_of(low));
  // `high` past the largest finite bf16 is infinity; it is then nearer when x is at least
  // halfway to 2^128 (the next binade's first value, which rounds there).
  const double high_value = (high & 0x7fffffffu) == 0x7f800000u
                                ? std::copysign(std::ldexp(1.0, 128), static_cast<double>(x))
                                : static_cast<double>(float_of(high));
  const double d_high = std::fabs(high_value - static_cast<double>(x));
  if (d_low < d_high) return static_cast<uint16_t>(low >> 16);
  if (d_high < d_low) return static_cast<uint16_t>(high >> 16);
  return static_cast<uint16_t>(((low >> 16) & 1u) == 0 ? low >> 16 : high >> 16);
}

Tensor bf16_tensor(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return cast(test::random_tensor(shape, DType::f32, seed, low, high), DType::bf16);
}

}  // namespace

TEST_CASE("bf16: f32 rounds to the nearest bf16, ties to even") {
  CHECK(bf16(1.0f).bits == 0x3f80);
  CHECK(bf16(float_of(0x3f808000u)).bits == 0x3f80);  // 1 + 2^-8: a tie, to the even 1
  CHECK(bf16(float_of(0x3f818000u)).bits == 0x3f82);  // 1 + 3 * 2^-8: a tie, up to even
  CHECK(bf16(float_of(0x3f808001u)).bits == 0x3f81);  // just past the tie
  CHECK(bf16(-0.0f).bits == 0x8000);
  CHECK(bf16(std::numeric_limits<float>::max()).bits == 0x7f80);  // past the largest: inf
  CHECK(bf16(-std::numeric_limits<float>::infinity()).bits == 0xff80);
  CHECK(bf16(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
  CHECK(bf16(float_of(0x00018000u)).bits == 0x0002);  // a subnormal tie, up to even
  const bf16 nan(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(static_cast<float>(nan)));
  CHECK(std::isnan(static_cast<float>(bf16(float_of(0xff800001u)))));  // signalling: still NaN
  CHECK((bf16(float_of(0xff800001u)).bits & 0x8000) != 0);             // with its sign
  // Every bf16 converts to f32 exactly and back to itself.
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const float x = float_of_bf16_bits(h);
    if (std::isnan(x)) continue;
    REQUIRE(bf16(x).bits == h);
  }
  // Random f32 bit patterns (every exponent) against the definition.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const float x = float_of(static_cast<uint32_t>(rng()));
    if (std::isnan(x) || std::isinf(x)) continue;
    INFO("x bits " << std::hex << bits_of(x));
    REQUIRE(bf16(x).bits == nearest_even(x));
  }
}

TEST_CASE("bf16: casts from and to every dtype, fill and item") {
  const Tensor x = test::random_tensor({5, 7}, DType::f32, 1, -300, 300);
  const Tensor h = cast(x, DType::bf16);
  CHECK(h.dtype() == DType::bf16);
  CHECK(std::string(dtype_name(DType::bf16)) == "bf16");
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_from_name("bfloat16") == DType::bf16);
  const std::vector<float> xs = x.to_vector<float>(), hs = cast(h, DType::f32).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) CHECK(bf16(xs[i]).bits == bf16(hs[i]).bits);
  CHECK(bits_of(hs[3]) == static_cast<uint32_t>(bf16(xs[3]).bits) << 16);
  // From a strided view, from f64 and integers; to f64 and integers.
  CHECK(same_bits(cast(test::strided_copy(x), DType::bf16), h));
  CHECK(same_bits(cast(cast(x, DType::f64), DType::bf16), h));
  const Tensor ints = Tensor::from_vector(std::vector<int64_t>{257, 259, -3, 1 << 20}, {4});
  CHECK(cast(cast(ints, DType::bf16), DType::f64).to_vector<double>() ==
        std::vector<double>{256, 260, -3, 1 << 20});  // 257: a tie to even; 259 up
  CHECK(cast(cast(Tensor::from_vector(std::vector<float>{2.75f, -2.75f}, {2}), DType::bf16),
             DType::i32)
            .to_vector<int32_t>() == std::vector<int32_t>{2, -2});
  CHECK(cast(cast(Tensor::from_vector(std::vector<uint8_t>{0, 255}, {2}), DType::bf16), DType::u8)
            .to_vector<uint8_t>() == std::vector<uint8_t>{0, 255});
  CHECK(full({3}, 0.1, DType::bf16).dtype() == DType::bf16);
  CHECK(full({3}, 0.1, DType::bf16).select(0, 1).item() == static_cast<float>(bf16(0.1f)));
  CHECK(zeros({2, 2}, DType::bf16).to(DType::f32).to_vector<float>() == std::vector<float>(4, 0));
}

TEST_CASE("bf16: elementwise ops compute in f32 and round once") {
  const Tensor a = bf16_tensor({6, 9}, 2, -2, 2), b = bf16_tensor({6, 9}, 3, 0.5, 2);
  const Tensor a32 = cast(a, DType::f32), b32 = cast(b, DType::f32);
  const auto rounded = [](const Tensor& t) { return cast(t, DType::bf16); };
  CHECK(same_bits(add(a, b), rounded(add(a32, b32))));
  CHECK(same_bits(sub(a, b), rounded(sub(a32, b32))));
  CHECK(same_bits(mul(a, b), rounded(mul(a32, b32))));
  CHECK(same_bits(div(a, b), rounded(div(a32, b32))));
  CHECK(same_bits(maximum(a, b), rounded(maximum(a32, b32))));
  CHECK(same_bits(gelu_backward(a, b), rounded(gelu_backward(a32, b32))));
  CHECK(same_bits(exp(a), rounded(exp(a32))));
  CHECK(same_bits(gelu(a), rounded(gelu(a32))));
  CHECK(same_bits(relu(a), rounded(relu(a32))));
  CHECK(same_bits(log(b), rounded(log(b32))));
  CHECK(same_bits(mul_scalar(a, 0.3), rounded(mul_scalar(a32, 0.3))));
  // Broadcast (a bias row) and strided operands.
  const Tensor row = bf16_tensor({9}, 4);
  CHECK(same_bits(add(a, row), rounded(add(a32, cast(row, DType::f32)))));
  CHECK(same_bits(mul(test::strided_copy(a), b), rounded(mul(a32, b32))));
  CHECK(same_bits(neg(test::strided_copy(a)), rounded(neg(a32))));
  // Operands of two dtypes are refused, as for f32 with f64.
  CHECK_THROWS_WITH_AS(add(a, a32), doctest::Contains("[add]"), Error);
}

TEST_CASE("bf16: dense operands go through f32 chunks with the per-element path's bits") {
  // 37 x 1001 = 37,037 values: threads, three blocks of 16,384 and f32 chunks of 2,048, the last
  // of each partial. Values from -100 to 100 (exp overflows), with NaN, infinities and zeros.
  Tensor a = bf16_tensor({37, 1001}, 5, -100, 100), b = bf16_tensor({37, 1001}, 6, 0.25, 60);
  fill_(a.select(0, 3).slice(0, 10, 20), std::nan(""));
  fill_(a.select(0, 4).slice(0, 0, 5), std::numeric_limits<double>::infinity());
  fill_(a.select(0, 4).slice(0, 5, 10), -std::numeric_limits<double>::infinity());
  fill_(a.select(0, 5).slice(0, 0, 7), 0.0);
  const Tensor a32 = cast(a, DType::f32), b32 = cast(b, DType::f32);
  const Tensor a_strided = test::strided_copy(a), b_strided = test::strided_copy(b);
  REQUIRE(a.is_contiguous());
  REQUIRE_FALSE(a_strided.is_contiguous());
  using Unary = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, Unary>> unary = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"elu", [](const Tensor& x) { return elu(x, 0.7); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"pow", [](const Tensor& x) { return pow(x, 3.0); }},
      {"mul_scalar", [](const Tensor& x) { return mul_scalar(x, 0.3); }},
  };
  for (const auto& [name, f] : unary) {
    RELPOS_INFO("{}", name);
    const Tensor dense = f(a);
    CHECK(same_bits(dense, cast(f(a32), DType::bf16)));
    CHECK(same_bits(dense, f(a_strided)));
  }
  using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Binary>> binary = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }},
      {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); }},
      {"relu_backward", [](const Tensor& x, const Tensor& y) { return relu_backward(x, y); }},
      {"elu_backward", [](const Tensor& x, const Tensor& y) { return elu_backward(x, y, 0.7); }},
      {"gelu_backward", [](const Tensor& x, const Tensor& y) { return gelu_backward(x, y); }},
      {"tanh_backward", [](const Tensor& x, const Tensor& y) { return tanh_backward(x, y); }},
  };
  for (const auto& [name, f] : binary) {
    RELPOS_INFO("{}", name);
    const Tensor dense = f(a, b);
    CHECK(same_bits(dense, cast(f(a32, b32), DType::bf16)));
    CHECK(same_bits(dense, f(a_strided, b_strided)));
  }
  // In place (the fused feed-forward's dropout): the output is the input.
  Generator gen(7);
  const Tensor mask = dropout_mask(a.shape(), 0.4, gen);
  const Tensor in_place = a.clone();
  apply_dropout_mask_(in_place, mask, 0.4);
  CHECK(same_bits(in_place, cast(apply_dropout_mask(a32, mask, 0.4), DType::bf16)));
}

TEST_CASE("bf16: matmul sums in f32; the result is rounded to bf16 or kept in f32") {
  for (const int flags : {0, 1, 2, 3}) {
    const bool ta = (flags & 1) != 0, tb = (flags & 2) != 0;
    CAPTURE(ta);
    CAPTURE(tb);
    const Tensor a = bf16_tensor(ta ? Shape{3, 37, 5} : Shape{3, 5, 37}, 5);
    const Tensor b = bf16_tensor(tb ? Shape{1, 11, 37} : Shape{1, 37, 11}, 6);
    // The exact product of the bf16 values, in f64: the f32 sums differ from it by rounding only.
    const Tensor exact = matmul(cast(a, DType::f64), cast(b, DType::f64), ta, tb);
    const Tensor kept = matmul(a, b, ta, tb, DType::f32);
    CHECK(kept.dtype() == DType::f32);
    CHECK(kept.shape() == Shape{3, 5, 11});
    CHECK_CLOSE(kept, exact, 1e-5, 1e-6);
    const Tensor rounded = matmul(a, b, ta, tb);
    CHECK(rounded.dtype() == DType::bf16);
    CHECK(same_bits(rounded, cast(kept, DType::bf16)));
    const Tensor a3 = a.expand({3, a.size(1), a.size(2)}), b3 = b.expand({3, b.size(1), b.size(2)});
    CHECK(same_bits(bmm(a3, b3.contiguous(), ta, tb, DType::f32), kept));
  }
  // Odd sizes and one folded linear-layer GEMM: x [2, 3, 13] @ w^T, w [7, 13].
  const Tensor x = bf16_tensor({2, 3, 13}, 8), w = bf16_tensor({7, 13}, 9);
  CHECK_CLOSE(matmul(x, w, false, true, DType::f32),
              matmul(cast(x, DType::f64), cast(w, DType::f64), false, true), 1e-5, 1e-6);
  CHECK_THROWS_WITH_AS(matmul(x, cast(w, DType::f32), false, true), doctest::Contains("[matmul]"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(cast(x, DType::f32), cast(w, DType::f32), false, true, DType::bf16),
                       doctest::Contains("bf16 operands may give f32"), Error);
  CHECK_THROWS_WITH_AS(matmul(x, w, false, true, DType::f64), doctest::Contains("[matmul]"), Error);
}

TEST_CASE("bf16: ops without a bf16 kernel say so and name themselves") {
  const Tensor h = bf16_tensor({4, 6}, 10);
  const auto says = [](const std::function<void()>& f, const std::string& op) {
    const std::string e = test::error_of(f);
    CAPTURE(e);
    CHECK(e.rfind("[" + op + "] ", 0) == 0);
    CHECK(e.find("bf16") != std::string::npos);
  };
  says([&] { softmax(h, 1); }, "softmax");
  says([&] { layer_norm(h, Tensor(), Tensor(), 1e-5); }, "layer_norm");
  says([&] { rfft(h, 6); }, "rfft");
  says([&] { sum(h); }, "sum");
  says([&] { max(h, {1}); }, "max");
  says([&] { cumsum(h, 1); }, "cumsum");
  says([&] { eq(h, h); }, "eq");
  says([&] { where(ones({4, 6}, DType::u8), h, h); }, "where");
  says([&] { argmax(h, 1); }, "argmax");
  says([&] { index_select(h, 0, test::random_indices({3}, 4, 11)); }, "index_select");
  says([&] { embedding(h, test::random_indices({3}, 4, 11)); }, "embedding");
  Generator gen(1);
  says([&] { rand({3}, gen, 0, 1, DType::bf16); }, "rand");
  // What bf16 does take beyond arithmetic: views, copies, joins, the finiteness check.
  CHECK(same_bits(cat({h, h}, 0).slice(0, 4, 8), h));
  CHECK(same_bits(h.transpose(0, 1).contiguous().transpose(0, 1).contiguous(), h));
  CHECK(all_finite(h));
  CHECK_FALSE(all_finite(cast(full({3}, std::numeric_limits<double>::infinity()), DType::bf16)));
}

TEST_CASE("bf16: CUDA matches CPU") {
  const Tensor x = test::random_tensor({33, 65}, DType::f32, 12, -4, 4);
  test::check_cuda_matches_cpu(
      "bf16 casts",
      [](const std::vector<Tensor>& in) {
        const Tensor h = cast(in[0], DType::bf16);
        return std::vector{cast(h, DType::f32), cast(cast(in[0], DType::f64), DType::bf16),
                           cast(h, DType::i32), full({5}, 0.1, DType::bf16, in[0].device())};
      },
      {x}, 0, 0);
  // Arithmetic that rounds the same f32 value on both (CUDA's expf may differ from the CPU's by
  // an f32 ulp, which can move a rounding: one bf16 ulp, 2^-8 relative).
  test::check_cuda_matches_cpu(
      "bf16 arithmetic",
      [](const std::vector<Tensor>& in) {
        const Tensor a = cast(in[0], DType::bf16), b = cast(in[1], DType::bf16);
        return std::vector{add(a, b), mul(a, b), div(a, b), relu(a), mul_scalar(a, 0.3)};
      },
      {x, test::random_tensor({33, 65}, DType::f32, 13, 0.5, 2)}, 0, 0);
  test::check_cuda_matches_cpu(
      "bf16 transcendental",
      [](const std::vector<Tensor>& in) {
        const Tensor a = cast(in[0], DType::bf16);
        return std::vector{exp(a), gelu(a), tanh(a)};
      },
      {x}, 1.0 / 128, 1e-6);
  test::check_cuda_matches_cpu(
      "bf16 matmul",
      [](const std::vector<Tensor>& in) {
        const Tensor a = cast(in[0], DType::bf16), b = cast(in[1], DType::bf16);
        return std::vector{matmul(a, b, false, true, DType::f32), matmul(a, b, false, true)};
      },
      {test::random_tensor({2, 17, 40}, DType::f32, 14),
       test::random_tensor({23, 40}, DType::f32, 15)},
      1.0 / 128, 1e-5);
}
