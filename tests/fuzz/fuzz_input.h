// What the libFuzzer targets share (tests/fuzz/fuzz_*.cpp): the fuzzer's bytes as a file a reader
// opens by path, and the rule every target follows: a relpos::Error is a clean refusal of bad
// input; anything else (a crash, a sanitizer report, another exception) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"

namespace relpos::fuzz {

// A scratch folder of this process, made once, removed at exit.
inline const std::filesystem::path& scratch() {
  static const struct Scratch {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("relpos_fuzz_" + std::to_string(::getpid()));
    Scratch() { std::filesystem::create_directories(path); }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } s;
  return s.path;
}

// Writes bytes to scratch()/name and returns its path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path.string();
}

// Runs `read`, treating a relpos::Error as the expected refusal of malformed input.
inline int expect_clean(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace relpos::fuzz
