// relpos::Error and the RELPOS_CHECK macro: user-facing failures carry "[component] message".
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace relpos {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throws relpos::Error("[component] formatted message").
template <typename... Args>
[[noreturn]] void fail(std::string_view component, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format("[{}] {}", component, fmt::format(f, std::forward<Args>(args)...)));
}

}  // namespace relpos

// RELPOS_CHECK(cond, "op", "fmt", args...): the message is only formatted when cond is false.
#define RELPOS_CHECK(cond, component, ...)    \
  do {                                        \
    if (!(cond)) {                            \
      ::relpos::fail(component, __VA_ARGS__); \
    }                                         \
  } while (0)
