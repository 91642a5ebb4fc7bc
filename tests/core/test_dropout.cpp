// dropout_mask and apply_dropout_mask: the kept fraction, reproducibility from (seed, offset),
// element i against the Philox formula, generator bookkeeping, p = 0, scaling, errors.
#include <algorithm>
#include <cmath>

#include "core/cpu/philox_words.h"
#include "core/philox.h"
#include "tests/harness.h"

using namespace relpos;

namespace {
double mean_of(const Tensor& mask) {
  double s = 0;
  for (double v : mask.to_vector<double>()) s += v;
  return s / static_cast<double>(mask.numel());
}
}  // namespace

TEST_CASE(
    "dropout_mask: the kept fraction is 1 - p within 5 standard deviations for 1e5 elements") {
  // Each element is kept with probability 1 - p, independently: the mean of n = 1e5 of them has
  // standard deviation sqrt(p (1 - p) / n) <= 0.0016; 5 of those fail by chance with p < 1e-6.
  const int64_t n = 100000;
  for (double p : {0.1, 0.5, 0.9}) {
    Generator gen(2024);
    const Tensor mask = dropout_mask({n}, p, gen);
    CHECK(mask.dtype() == DType::u8);
    const double sigma = std::sqrt(p * (1 - p) / n);
    INFO("p " << p << " kept " << mean_of(mask));
    CHECK(std::abs(mean_of(mask) - (1 - p)) < 5 * sigma);
    int64_t not_binary = 0;
    for (double v : mask.to_vector<double>()) not_binary += v != 0 && v != 1;
    CHECK(not_binary == 0);
  }
}

TEST_CASE(
    "dropout_mask: element i is philox uniform(seed, offset, i) >= p; shape does not matter") {
  Generator gen(77);
  gen.reserve(5);  // start at a non-zero offset
  const Tensor mask = dropout_mask({7, 13}, 0.3, gen);
  CHECK(mask.shape() == Shape{7, 13});
  const std::vector<uint8_t> m = mask.to_vector<uint8_t>();
  for (size_t i = 0; i < m.size(); ++i) CHECK(m[i] == (philox::uniform(77, 5, i) >= 0.3 ? 1 : 0));
  Generator again(77);
  again.reserve(5);
  CHECK(dropout_mask({91}, 0.3, again).to_vector<uint8_t>() == m);
}

// The CPU draws the words in bulk (core/cpu/philox_words.h): many blocks of 4,096 elements, in
// parallel above 65,536, a seed and counters past 32 bits, and p on an exact threshold.
TEST_CASE("dropout_mask: bulk words equal philox uniform per element, large seeds and offsets") {
  const uint64_t seed = 0x1234567890ABCDEFull, offset = (uint64_t{1} << 33) - 7;
  for (const double p : {0.25, 0.1, 0.9}) {
    Generator gen(seed);
    gen.reserve(offset);
    const std::vector<uint8_t> m = dropout_mask({70001}, p, gen).to_vector<uint8_t>();
    int64_t wrong = 0;
    for (size_t i = 0; i < m.size(); ++i)
      wrong += m[i] != (philox::uniform(seed, offset, i) >= p ? 1 : 0);
    CHECK(wrong == 0);
  }
}

// philox_words computes eight blocks at a time where the CPU has AVX2, the rest one by one, and
// the eight one by one too where their counters' low word wraps to 0.
TEST_CASE("philox_words: every block is philox block_at, any count, across the low word's wrap") {
  const uint64_t seed = 0xF00DFACE12345678ull;
  for (const uint64_t first : {uint64_t{0}, uint64_t{5}, (uint64_t{1} << 32) - 20,
                               (uint64_t{1} << 32) - 8, (uint64_t{7} << 32) - 3, ~uint64_t{0} - 30})
    for (int64_t count = 0; count <= 41; ++count) {
      std::vector<uint32_t> words(4 * static_cast<size_t>(count) + 1, 0xDEADBEEFu);
      cpu::philox_words(seed, first, count, words.data());
      int64_t wrong = 0;
      for (int64_t b = 0; b < count; ++b) {
        const philox::Block want = philox::block_at(seed, first + static_cast<uint64_t>(b));
        for (int w = 0; w < 4; ++w) wrong += words[4 * b + w] != want.v[w];
      }
      INFO("first " << first << " count " << count);
      CHECK(wrong == 0);
      CHECK(words.back() == 0xDEADBEEFu);  // nothing written past the blocks
    }
}

TEST_CASE("dropout_mask: same (seed, offset) repeats; a new offset or seed differs; gen advances") {
  const Shape s = {999};
  Generator a(5), b(5), c(6);
  const Tensor a1 = dropout_mask(s, 0.5, a);
  CHECK(a.offset() == philox::blocks_for_uniform(999));  // ceil(999 / 4) = 250 blocks reserved
  const Tensor a2 = dropout_mask(s, 0.5, a);
  const Tensor b1 = dropout_mask(s, 0.5, b);
  const Tensor c1 = dropout_mask(s, 0.5, c);
  CHECK(a1.to_vector<uint8_t>() == b1.to_vector<uint8_t>());
  CHECK(a1.to_vector<uint8_t>() != a2.to_vector<uint8_t>());
  CHECK(a1.to_vector<uint8_t>() != c1.to_vector<uint8_t>());
  // Replaying a saved state reproduces the second mask.
  Generator replay(5);
  replay.set_state(5, 250);
  CHECK(dropout_mask(s, 0.5, replay).to_vector<uint8_t>() == a2.to_vector<uint8_t>());
}

TEST_CASE("dropout_mask: p = 0 keeps every element and leaves the generator where it was") {
  Generator gen(3);
  const Tensor mask = dropout_mask({4, 5}, 0.0, gen);
  CHECK(mask.to_vector<uint8_t>() == std::vector<uint8_t>(20, 1));
  CHECK(gen.offset() == 0);
  CHECK(dropout_mask({0}, 0.5, gen).numel() == 0);
}

// The keep test compares 32-bit words (core/cpu/philox_words.h's KeepTest); its threshold
// ceil(p 2^32) is 2^32, above every word, for p within 2^-32 of 1, and 2^32 - 1 just below.
TEST_CASE("dropout_mask: p within 2^-32 of 1 keeps nothing; just below, only the top word passes") {
  const double top = 1.0 - std::ldexp(1.0, -33), below = 1.0 - std::ldexp(1.0, -32);
  CHECK(cpu::keep_threshold(top) == (uint64_t{1} << 32));
  CHECK(cpu::keep_threshold(below) == (uint64_t{1} << 32) - 1);
  CHECK(cpu::keep_test(below).least == UINT32_MAX);
  CHECK(cpu::keep_test(below).passing_kept);
  CHECK_FALSE(cpu::keep_test(top).passing_kept);
  for (const double p : {top, below}) {
    Generator gen(11);
    const std::vector<uint8_t> m = dropout_mask({70001}, p, gen).to_vector<uint8_t>();
    CHECK(std::count(m.begin(), m.end(), uint8_t{1}) == 0);
  }
}

TEST_CASE("apply_dropout_mask: x * mask / (1 - p) on strided inputs, f32 and f64, broadcast mask") {
  // f32: x * (1 / (1 - p)) vs x / (1 - p) differ by at most 1 ulp, so rtol 1e-6.
  for (DType dt : {DType::f32, DType::f64}) {
    const double p = 0.35;
    const Tensor x = test::random_tensor({5, 7, 9}, dt, 301, -3, 3);
    Generator gen(302);
    const Tensor mask = dropout_mask({5, 7, 9}, p, gen);
    const Tensor y = apply_dropout_mask(test::strided_copy(x), test::strided_copy(mask), p);
    CHECK(y.dtype() == dt);
    const std::vector<double> xv = x.to_vector<double>(), mv = mask.to_vector<double>();
    std::vector<double> want(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) want[i] = xv[i] * mv[i] / (1 - p);
    CHECK_CLOSE(y, Tensor::from_vector(want, {5, 7, 9}), dt == DType::f32 ? 1e-6 : 1e-15, 1e-30);
    // A [7, 9] mask applies to every one of the 5 leading slices.
    const Tensor m2 = dropout_mask({7, 9}, p, gen);
    const std::vector<double> m2v = m2.to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i) want[i] = xv[i] * m2v[i % 63] / (1 - p);
    CHECK_CLOSE(apply_dropout_mask(x, m2, p), Tensor::from_vector(want, {5, 7, 9}),
                dt == DType::f32 ? 1e-6 : 1e-15, 1e-30);
  }
  const Tensor x = test::random_tensor({6}, DType::f32, 303);
  CHECK(apply_dropout_mask(x, ones({6}, DType::u8), 0.0).to_vector<float>() ==
        x.to_vector<float>());
}

TEST_CASE("apply_dropout_mask: the bits of cast, mul_scalar and mul; in place, the same bits") {
  for (DType dt : {DType::f32, DType::f64}) {
    const double p = 0.3;
    Tensor x = test::random_tensor({33, 65}, dt, 304, -3, 3);
    fill_(x.slice(0, 3, 4), std::nan(""));  // a NaN row: dropped or kept, it stays NaN
    fill_(x.slice(0, 5, 6), INFINITY);      // inf * 0 is NaN, -0 * scale and -x * 0 are -0
    fill_(x.slice(0, 6, 7), -INFINITY);
    fill_(x.slice(0, 7, 8), -0.0);
    Generator gen(305);
    const Tensor mask = dropout_mask(x.shape(), p, gen);
    const Tensor composed = mul(x, mul_scalar(cast(mask, dt), 1.0 / (1.0 - p)));
    const Tensor y = apply_dropout_mask(x, mask, p);
    CHECK(test::same_bits(y, composed));
    // Strided operands and a mask broadcast over rows take the strided loop: the same bits.
    const Tensor row_mask = mask.slice(0, 0, 1);
    CHECK(test::same_bits(apply_dropout_mask(test::strided_copy(x), row_mask, p),
                          mul(x, mul_scalar(cast(row_mask, dt), 1.0 / (1.0 - p)))));
    const Tensor in_place = x.clone();
    apply_dropout_mask_(in_place, mask, p);
    CHECK(test::same_bits(in_place, composed));
    for (double v : y.slice(0, 3, 4).to_vector<double>()) CHECK(std::isnan(v));
  }
  const Tensor x = test::random_tensor({4, 6}, DType::f32, 306);
  CHECK(test::error_of([&] {
          apply_dropout_mask_(x.transpose(0, 1), ones({6, 4}, DType::u8), 0.5);
        }).find("[apply_dropout_mask_] x must be contiguous") != std::string::npos);
}

TEST_CASE("apply_dropout_mask: bf16 is computed in f32 and rounded once, in place too") {
  const double p = 0.3;
  const Tensor x = cast(test::random_tensor({33, 65}, DType::f32, 307, -3, 3), DType::bf16);
  Generator gen(308);
  const Tensor mask = dropout_mask(x.shape(), p, gen);
  const Tensor want = cast(apply_dropout_mask(cast(x, DType::f32), mask, p), DType::bf16);
  const Tensor y = apply_dropout_mask(x, mask, p);
  CHECK(y.dtype() == DType::bf16);
  CHECK(test::same_bits(y, want));
  const Tensor in_place = x.clone();
  apply_dropout_mask_(in_place, mask, p);
  CHECK(test::same_bits(in_place, want));
  CHECK_FALSE(test::same_bits(y, x));  // something was dropped and scaled
}

TEST_CASE("dropout: errors name the op (p outside [0, 1), bad mask)") {
  Generator gen(1);
  CHECK_THROWS_WITH_AS(dropout_mask({3}, 1.0, gen),
                       doctest::Contains("[dropout_mask] p must be in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(dropout_mask({3}, -0.1, gen), doctest::Contains("[dropout_mask]"), Error);
  CHECK_THROWS_WITH_AS(dropout_mask({3}, NAN, gen), doctest::Contains("[dropout_mask]"), Error);
  const Tensor x = zeros({3, 4});
  const Tensor m = ones({3, 4}, DType::u8);
  CHECK_THROWS_WITH_AS(apply_dropout_mask(x, m, 1.0), doctest::Contains("[apply_dropout_mask]"),
                       Error);
  CHECK_THROWS_WITH_AS(apply_dropout_mask(x, m, -1), doctest::Contains("[apply_dropout_mask]"),
                       Error);
  CHECK_THROWS_WITH_AS(apply_dropout_mask(x, ones({3, 4}), 0.5),
                       doctest::Contains("[apply_dropout_mask] mask must be u8"), Error);
  CHECK_THROWS_WITH_AS(apply_dropout_mask(x, ones({4, 3}, DType::u8), 0.5),
                       doctest::Contains("[apply_dropout_mask]"), Error);
  CHECK_THROWS_WITH_AS(apply_dropout_mask(x, ones({2, 3, 4}, DType::u8), 0.5),
                       doctest::Contains("[apply_dropout_mask]"), Error);
  CHECK_THROWS_WITH_AS(apply_dropout_mask(zeros({3, 4}, DType::i32), m, 0.5),
                       doctest::Contains("[apply_dropout_mask]"), Error);
  CHECK(gen.offset() == 0);  // failed calls reserve nothing
}

TEST_CASE("dropout: CPU and CUDA agree (identical masks for one generator state)") {
  const Tensor x = test::random_tensor({33, 65}, DType::f32, 311, -2, 2);
  test::check_cuda_matches_cpu(
      "dropout",
      [](const std::vector<Tensor>& in) {
        Generator gen(312);
        const Tensor mask = dropout_mask(in[0].shape(), 0.25, gen, in[0].device());
        return std::vector<Tensor>{mask, apply_dropout_mask(in[0], mask, 0.25)};
      },
      {x}, 0, 1e-12);  // both devices compute the same exactly rounded products
  test::check_cuda_matches_cpu(
      "dropout bf16",
      [](const std::vector<Tensor>& in) {
        Generator gen(313);
        const Tensor mask = dropout_mask(in[0].shape(), 0.25, gen, in[0].device());
        return std::vector<Tensor>{apply_dropout_mask(in[0], mask, 0.25)};
      },
      {cast(x, DType::bf16)}, 0, 0);  // one f32 product, rounded once: the same bits
}
