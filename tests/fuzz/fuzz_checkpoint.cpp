// An HDF5 checkpoint through the reader `relpos eval` and `--resume` use.
#include "tests/fuzz/fuzz_input.h"
#include "train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  const std::string path = fuzz::write_input("checkpoint.h5", data, size);
  return fuzz::expect_clean([&] { read_checkpoint(path); });
}
