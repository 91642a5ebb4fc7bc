// CPU Philox sampling: element i is computed from (seed, offset, i) alone, like the CUDA kernels.
#include <algorithm>
#include <cmath>

#include "core/backend.h"
#include "core/cpu/philox_words.h"
#include "core/philox.h"

namespace relpos::cpu {

namespace {

// Calls f(i, u) for every element i < n with u = philox::uniform(seed, offset, i), computing each
// Philox block once for its four elements (the per-element form would compute it four times).
template <typename F>
void for_each_uniform(int64_t n, uint64_t seed, uint64_t offset, const F& f) {
  const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t b = 0; b < blocks; ++b) {
    const philox::Block block = philox::block_at(seed, offset + static_cast<uint64_t>(b));
    const int64_t first = 4 * b, count = n - first < 4 ? n - first : 4;
    for (int64_t k = 0; k < count; ++k) f(first + k, philox::to_unit(block.v[k]));
  }
}

}  // namespace

void random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  dispatch_floating(out.dtype(), "rand", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    for_each_uniform(out.numel(), seed, offset, [&](int64_t i, double u) {
      const T v = static_cast<T>(low + (high - low) * u);
      p[i] = v < static_cast<T>(high) ? v : std::nextafter(static_cast<T>(high), T(low));
    });
  });
}

void random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double std) {
  dispatch_floating(out.dtype(), "randn", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t n = out.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<T>(mean + std * philox::normal(seed, offset, i));
  });
}

void dropout_mask(const Tensor& out, double p, uint64_t seed, uint64_t offset) {
  // Element i keeps when philox::uniform(seed, offset, i) >= p; blocks of words in bulk.
  constexpr int64_t kBlocks = 1024;  // per task: 4096 elements
  uint8_t* m = out.data<uint8_t>();
  const int64_t n = out.numel(), tasks = (n + 4 * kBlocks - 1) / (4 * kBlocks);
  const uint64_t threshold = keep_threshold(p);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t t = 0; t < tasks; ++t) {
    uint32_t words[4 * kBlocks];
    const int64_t first = t * 4 * kBlocks, count = std::min<int64_t>(4 * kBlocks, n - first);
    philox_words(seed, offset + static_cast<uint64_t>(t * kBlocks), (count + 3) / 4, words);
#pragma omp simd
    for (int64_t k = 0; k < count; ++k) m[first + k] = words[k] >= threshold ? 1 : 0;
  }
}

}  // namespace relpos::cpu
