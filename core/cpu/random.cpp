// CPU Philox sampling: element i is computed from (seed, offset, i) alone, like the CUDA kernels.
#include <cmath>

#include "core/backend.h"
#include "core/philox.h"

namespace relpos::cpu {

void random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  dispatch_floating(out.dtype(), "rand", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const int64_t n = out.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) {
      const T v = static_cast<T>(low + (high - low) * philox::uniform(seed, offset, i));
      p[i] = v < static_cast<T>(high) ? v : std::nextafter(static_cast<T>(high), T(low));
    }
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
  uint8_t* m = out.data<uint8_t>();
  const int64_t n = out.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) m[i] = philox::uniform(seed, offset, i) >= p ? 1 : 0;
}

}  // namespace relpos::cpu
