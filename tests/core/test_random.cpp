// rand and randn: element i is low + (high - low) · philox::uniform(seed, offset, i), or mean +
// std · philox::normal(seed, offset, i), in f64 and f32, for sizes that are not a multiple of the
// values a Philox block gives, and from a non-zero offset; the generator advances by the blocks
// it used.
#include <doctest/doctest.h>

#include "core/ops.h"
#include "core/philox.h"

using namespace relpos;

TEST_CASE("rand: element i is philox uniform(seed, offset, i) scaled to [low, high)") {
  for (const int64_t n : {1, 3, 91, 70001}) {  // 70001 takes the threaded path
    Generator gen(123);
    gen.reserve(9);
    const Tensor x = rand({n}, gen, -2.0, 3.0, DType::f64);
    CHECK(gen.offset() == 9 + philox::blocks_for_uniform(n));
    const std::vector<double> v = x.to_vector<double>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += v[i] != -2.0 + 5.0 * philox::uniform(123, 9, i);
    CHECK_MESSAGE(wrong == 0, "n = " << n);
    Generator again(123);
    again.reserve(9);
    const std::vector<float> f = rand({n}, again, -2.0, 3.0, DType::f32).to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      wrong += f[i] != static_cast<float>(-2.0 + 5.0 * philox::uniform(123, 9, i));
    CHECK_MESSAGE(wrong == 0, "f32, n = " << n);
  }
}

TEST_CASE("randn: element i is philox normal(seed, offset, i) scaled, each block drawn once") {
  for (const int64_t n : {1, 2, 3, 91, 70001}) {  // 70001 takes the threaded path
    Generator gen(321);
    gen.reserve(5);
    const std::vector<double> v = randn({n}, gen, 0.5, 2.0, DType::f64).to_vector<double>();
    CHECK(gen.offset() == 5 + philox::blocks_for_normal(n));
    Generator again(321);
    again.reserve(5);
    const std::vector<float> f = randn({n}, again, 0.5, 2.0, DType::f32).to_vector<float>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = 0.5 + 2.0 * philox::normal(321, 5, i);
      wrong += (v[i] != want) + (f[i] != static_cast<float>(want));
    }
    CHECK_MESSAGE(wrong == 0, "n = " << n);
  }
}
