// CPU Philox sampling: element i is computed from (seed, offset, i) alone, like the CUDA kernels.
#include <algorithm>
#include <cmath>

#include "core/backend.h"
#include "core/cpu/philox_words.h"
#include "core/philox.h"

namespace relpos::cpu {

namespace {

// Calls f(first, count, words) for consecutive runs of the Philox blocks offset + first ..
// offset + first + count - 1 of a stream of `blocks`, words[4 b + w] being word w of block
// first + b: the blocks computed in bulk (philox_words), each once, the runs spread over threads.
template <typename F>
void for_each_block_run(int64_t blocks, uint64_t seed, uint64_t offset, const F& f) {
  constexpr int64_t kRun = 1024;  // blocks per task: 16 KiB of words on the stack
  const int64_t tasks = (blocks + kRun - 1) / kRun;
#pragma omp parallel for schedule(static) if (blocks > 16384)
  for (int64_t t = 0; t < tasks; ++t) {
    uint32_t words[4 * kRun];
    const int64_t first = t * kRun, count = std::min(kRun, blocks - first);
    philox_words(seed, offset + static_cast<uint64_t>(first), count, words);
    f(first, count, words);
  }
}

}  // namespace

void random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  dispatch_floating(out.dtype(), "rand", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t n = out.numel();
    // Element i is philox::uniform(seed, offset, i): word i % 4 of block i / 4.
    for_each_block_run(static_cast<int64_t>(philox::blocks_for_uniform(n)), seed, offset,
                       [&](int64_t first, int64_t count, const uint32_t* words) {
                         const int64_t begin = 4 * first, end = std::min(n, 4 * (first + count));
                         for (int64_t i = begin; i < end; ++i) {
                           const double u = philox::to_unit(words[i - begin]);
                           const T v = static_cast<T>(low + (high - low) * u);
                           p[i] = v < static_cast<T>(high)
                                      ? v
                                      : std::nextafter(static_cast<T>(high), static_cast<T>(low));
                         }
                       });
  });
}

void random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double std) {
  dispatch_floating(out.dtype(), "randn", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t n = out.numel();
    // Element i is philox::normal(seed, offset, i): words 2 (i % 2), 2 (i % 2) + 1 of block i / 2.
    for_each_block_run(static_cast<int64_t>(philox::blocks_for_normal(n)), seed, offset,
                       [&](int64_t first, int64_t count, const uint32_t* words) {
                         const int64_t begin = 2 * first, end = std::min(n, 2 * (first + count));
                         for (int64_t i = begin; i < end; ++i) {
                           const uint32_t* w = words + 2 * (i - begin);
                           p[i] = static_cast<T>(mean + std * philox::box_muller(w[0], w[1]));
                         }
                       });
  });
}

void dropout_mask(const Tensor& out, double p, uint64_t seed, uint64_t offset) {
  // Element i keeps when philox::uniform(seed, offset, i) >= p: its word is >= the threshold.
  uint8_t* m = out.data<uint8_t>();
  const int64_t n = out.numel();
  const KeepTest test = keep_test(p);
  const uint8_t kept = test.passing_kept ? 1 : 0;
  // Captured by value: a u8 store may alias any captured reference, which would be reloaded per
  // element and keep the loop scalar.
  for_each_block_run(
      static_cast<int64_t>(philox::blocks_for_uniform(n)), seed, offset,
      [m, n, least = test.least, kept](int64_t first, int64_t count, const uint32_t* words) {
        const int64_t begin = 4 * first, end = std::min(n, 4 * (first + count));
        uint8_t* out = m + begin;
#pragma omp simd
        for (int64_t i = 0; i < end - begin; ++i) out[i] = words[i] >= least ? kept : 0;
      });
}

}  // namespace relpos::cpu
