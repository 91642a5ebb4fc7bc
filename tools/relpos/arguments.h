// Numbers on the relpos command line: the whole text must be the number, or the command fails
// naming the flag (exit 2), never with the library's own exception; inf and nan are not numbers
// here.
#pragma once

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

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

}  // namespace relpos::cli
