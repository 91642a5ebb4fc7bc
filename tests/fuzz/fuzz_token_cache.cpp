// An HDF5 token cache (as DataLoader's cache writes it) read back against its source file, whose
// size and mtime match the stamp of the seeds fuzz_seeds writes.
#include "datasets/token_cache.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  static const std::string source = fuzz::token_cache_source(fuzz::scratch().string());
  const std::string cache = fuzz::write_input("cache.h5", data, size);
  return fuzz::expect_clean([&] { load_cached(cache, source); });
}
