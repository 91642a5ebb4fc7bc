// Numbers on the relpos command line: the whole text must be the number, or the command fails
// naming the flag (exit 2), never with the library's own exception; inf and nan are not numbers
// here. And the KEY.PATH=VALUE overrides of a command: each key once.
#pragma once

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace relpos::cli {

template <typename T>
T parse_number(const char* who, const std::string& flag, const std::string& text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if constexpr (std::is_integral_v<T>)
    RELPOS_CHECK(ec != std::errc::result_out_of_range, who,
                 "{} expects an integer from {} to {}, got '{}'", flag,
                 std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), text);
  RELPOS_CHECK(ec == std::errc() && end == text.data() + text.size(), who,
               "{} expects {}, got '{}'", flag, std::is_integral_v<T> ? "an integer" : "a number",
               text);
  if constexpr (std::is_floating_point_v<T>)
    RELPOS_CHECK(std::isfinite(value), who, "{} expects a finite number, got '{}'", flag, text);
  return value;
}

template <typename T>
T parse_positive(const char* who, const std::string& flag, const std::string& text) {
  const T value = parse_number<T>(who, flag, text);
  RELPOS_CHECK(value > 0, who, "{} must be positive, got '{}'", flag, text);
  return value;
}

// --min-time of the bench commands: seconds spent on each timing, positive, at most an hour.
inline double parse_min_time(const std::string& text) {
  const double seconds = parse_positive<double>("bench", "--min-time", text);
  RELPOS_CHECK(seconds <= 3600, "bench", "--min-time is at most 3600 seconds per timing, got '{}'",
               text);
  return seconds;
}

// The overrides of --set and of the options that set a key (--out: train.out, --device: device,
// --data-dir: data.dir), each key at most once: a second value for one key was taken silently
// over the first.
inline void check_keys_once(const char* who, const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> first;  // key -> its override
  for (const std::string& o : overrides) {
    const auto [it, fresh] = first.emplace(o.substr(0, o.find('=')), o);
    RELPOS_CHECK(fresh, who,
                 "the key '{}' is set twice ('{}' and '{}'); set each key once (--out, --device "
                 "and --data-dir set train.out, device and data.dir)",
                 it->first, it->second, o);
  }
}

}  // namespace relpos::cli
