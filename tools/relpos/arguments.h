// Numbers on the relpos command line: the whole text must be the number, or the command fails
// naming the flag (exit 2), never with the library's own exception.
#pragma once

#include <charconv>
#include <string>
#include <type_traits>

#include "core/error.h"

namespace relpos::cli {

template <typename T>
T parse_number(const char* who, const std::string& flag, const std::string& text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  RELPOS_CHECK(ec == std::errc() && end == text.data() + text.size(), who,
               "{} expects {}, got '{}'", flag, std::is_integral_v<T> ? "an integer" : "a number",
               text);
  return value;
}

template <typename T>
T parse_positive(const char* who, const std::string& flag, const std::string& text) {
  const T value = parse_number<T>(who, flag, text);
  RELPOS_CHECK(value > 0, who, "{} must be positive, got '{}'", flag, text);
  return value;
}

}  // namespace relpos::cli
