// The relpos_bench_* programs' command lines: options defined with CLI11 (which writes their
// --help), and one way to fail for bad flags and failed runs alike: "<program>: <cause>" on
// stderr, exit 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace relpos::bench {

// A number above 0 (positive) or at least 0 (non_negative); CLI11's own range checks would print
// the whole range of a double in their message. `text` must be all number.
inline CLI::Validator number_check(bool zero_allowed) {
  const char* what = zero_allowed ? "NONNEGATIVE" : "POSITIVE";
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "expected a number, got '" + text + "'";
        if (zero_allowed ? value >= 0 : value > 0) return "";
        return std::string("must be ") + (zero_allowed ? ">= 0" : "positive") + ", got " + text;
      },
      what);
}
inline const CLI::Validator positive = number_check(false);
inline const CLI::Validator non_negative = number_check(true);

// Parses the command line into `app`'s options, then returns body()'s exit status.
template <typename Body>
int run_cli(CLI::App& app, int argc, char** argv, const Body& body) {
  const std::string& name = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success&) {  // --help
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", name.c_str(), e.what(), name.c_str());
    return 2;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return 2;
  }
}

}  // namespace relpos::bench
