// The shared op-test harness: seeded random inputs, strided (non-contiguous) copies of them,
// closeness checks that report the worst element, and CPU≡CUDA comparison that skips visibly
// when no GPU is present.
#pragma once

#include <doctest/doctest.h>

// doctest prints a `const char*` (e.g. INFO("dtype " << dtype_name(dt))) as its address; these
// print the text. (DOCTEST_CONFIG_TREAT_CHAR_STAR_AS_STRING would, but it does not compile in
// doctest 2.4.9.) Every test includes doctest through this header, so all see the same maker.
template <>
struct doctest::StringMaker<const char*> {
  static String convert(const char* text) { return text == nullptr ? "nullptr" : text; }
};
template <>
struct doctest::StringMaker<char*> : doctest::StringMaker<const char*> {};

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/ops.h"

namespace relpos::test {

// Uniform in [low, high) on the CPU, from a fixed seed.
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double low = -1,
                     double high = 1);
// Random integers in [0, bound) as i64 (or i32).
Tensor random_indices(const Shape& shape, int64_t bound, uint64_t seed, DType dtype = DType::i64);
// The same values as x, laid out as a strided view (every other element of a larger buffer,
// with the last two dims transposed in memory), so kernels meet non-unit strides.
Tensor strided_copy(const Tensor& x);

// Max |a - b| / (atol + rtol |b|) over all elements, and where it happens.
struct CloseReport {
  bool ok = true;
  std::string detail;
};
CloseReport compare_close(const Tensor& actual, const Tensor& expected, double rtol, double atol);
// The same dtype, shape and bytes (on any device).
bool same_bits(const Tensor& a, const Tensor& b);

}  // namespace relpos::test

// CHECK that two tensors match within tolerances; the failure message names the worst element.
#define CHECK_CLOSE(actual, expected, rtol, atol)                                           \
  do {                                                                                      \
    const auto relpos_report = ::relpos::test::compare_close(actual, expected, rtol, atol); \
    CHECK_MESSAGE(relpos_report.ok, relpos_report.detail);                                  \
  } while (0)

namespace relpos::test {

// A fresh folder under the system temp folder (unique per process and call), removed with its
// contents at scope exit; write() puts a text file in it and returns its path.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string write(const std::string& name, const std::string& text) const;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Runs f on CPU inputs and on the same inputs moved to cuda:0, and checks the results agree
// (rtol, atol). Without a GPU, emits a visible "SKIPPED (no CUDA device)" message instead.
// The message of the relpos::Error that f throws ("" when it throws none).
std::string error_of(const std::function<void()>& f);

void check_cuda_matches_cpu(const std::string& what,
                            const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& f,
                            const std::vector<Tensor>& cpu_inputs, double rtol = 1e-5,
                            double atol = 1e-6);

}  // namespace relpos::test

// doctest's INFO with the message formatted at once by fmt: INFO captures its expression by
// reference in a lambda, which clang before 16 refuses for structured bindings
// (`for (auto [lq, lk] : ...)`), so test loops over bindings use this one.
#define RELPOS_INFO(...)                                                            \
  const std::string DOCTEST_CAT(relpos_info_, __LINE__) = fmt::format(__VA_ARGS__); \
  INFO(DOCTEST_CAT(relpos_info_, __LINE__))
