// A run configuration as YAML text (the loader relpos train and eval parse).
#include "tests/fuzz/fuzz_input.h"
#include "train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::expect_clean([&] { parse_config(text, "fuzz.yaml"); });
}
