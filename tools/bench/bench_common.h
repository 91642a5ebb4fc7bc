// What the relpos benchmarks share: the timing method (two warm-up calls, then at least
// `min_runs` runs and `min_seconds` in total; median and minimum), the peak-memory probe (bytes
// the device allocator held at the peak of one call beyond what was live before it; FFTW /
// OpenBLAS / cuBLAS internal buffers do not go through it) and comma-separated lists.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"

namespace relpos::bench {

// Milliseconds to 4 decimals for the JSON outputs: more digits than that are noise.
inline double rounded_ms(double ms) {
  return std::round(ms * 1e4) / 1e4;
}

struct Timing {
  double median_ms = 0, min_ms = 0;
  int64_t runs = 0;
};

// Each sample covers one call and ends with a device synchronize; what the call returns is
// freed after the clock stops (as `out = fn()` in the Python twins).
template <typename Call>
Timing time_call(const Call& call, Device device, double min_seconds, int64_t min_runs = 5) {
  for (int i = 0; i < 2; ++i) call();
  synchronize(device);
  std::vector<double> ms;
  double total_s = 0;
  while ((static_cast<int64_t>(ms.size()) < min_runs || total_s < min_seconds) &&
         ms.size() < 100000) {
    const auto start = std::chrono::steady_clock::now();
    const auto out = call();
    synchronize(device);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ms.push_back(s * 1e3);
    total_s += s;
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return {median, ms.front(), static_cast<int64_t>(n)};
}

inline int64_t peak_bytes_of(const std::function<void()>& call, Device device) {
  synchronize(device);
  reset_peak_memory(device);
  const int64_t before = memory_stats(device).current_bytes;
  call();
  synchronize(device);
  return memory_stats(device).peak_bytes - before;
}

// "a,b,c" -> {"a", "b", "c"}; "" -> {}. An empty item ("a,,b", ",") is refused naming `option`.
inline std::vector<std::string> split_list(const std::string& text, const char* option) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::stringstream list(text + ",");  // so a trailing ',' leaves an empty last item
  for (std::string item; std::getline(list, item, ',');) {
    RELPOS_CHECK(!item.empty(), "bench", "{}: an empty item in '{}'", option, text);
    out.push_back(item);
  }
  return out;
}

}  // namespace relpos::bench
