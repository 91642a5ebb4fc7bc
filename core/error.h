// relpos::Error and the RELPOS_CHECK macro: user-facing failures carry "[component] message".
// Callers that treat some failures differently catch them by type (DataMissing, StepError),
// never by their message.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace relpos {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A dataset's files are not where the config says: the user prepares or fetches them (`relpos
// reproduce` reports the cell as "data missing" instead of failing it).
class DataMissing : public Error {
 public:
  using Error::Error;
};

// A failure of the training loop that already names its step (the trainer adds the step to any
// other error raised while computing one).
class StepError : public Error {
 public:
  using Error::Error;
};

// A buffer the memory left cannot hold (the CPU and CUDA allocators): the caller may say what it
// was building.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// What the command line says for std::bad_alloc: the sizes asked for are larger than the memory
// there is, a user's error, not relpos's (tensors are refused earlier, by the allocators).
inline constexpr const char* kHostOutOfMemory =
    "[host] out of memory: a buffer larger than the memory left was asked for (std::bad_alloc); "
    "check the configuration's sizes";

// Throws E (relpos::Error by default) with "[component] formatted message".
template <typename E = Error, typename... Args>
[[noreturn]] void fail(std::string_view component, fmt::format_string<Args...> f, Args&&... args) {
  throw E(fmt::format("[{}] {}", component, fmt::format(f, std::forward<Args>(args)...)));
}

// Runs `f`; an Error it throws whose message does not name 'origin' is thrown again as
// "[component] 'origin': message", so a check deep inside (a module's parameters against a
// checkpoint's) names the file it read. The Error's subclass is not kept: wrap checks, not work
// whose DataMissing or OutOfMemory a caller tells apart.
template <typename F>
decltype(auto) naming_origin(const std::string& origin, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const Error& e) {
    const std::string what = e.what();
    const size_t end = what.find("] ");
    if (end == std::string::npos || what.front() != '[' ||
        what.find("'" + origin + "'") != std::string::npos)
      throw;
    throw Error(fmt::format("{}'{}': {}", what.substr(0, end + 2), origin, what.substr(end + 2)));
  }
}

}  // namespace relpos

// RELPOS_CHECK(cond, "op", "fmt", args...): the message is only formatted when cond is false.
#define RELPOS_CHECK(cond, component, ...)    \
  do {                                        \
    if (!(cond)) {                            \
      ::relpos::fail(component, __VA_ARGS__); \
    }                                         \
  } while (0)
