// An IMDB split whose one positive review is the input (negative: a fixed valid review).
#include <filesystem>

#include "datasets/imdb.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  namespace fs = std::filesystem;
  static const fs::path root = [] {
    const fs::path r = fuzz::scratch() / "imdb";
    fs::create_directories(r / "aclImdb" / "test" / "pos");
    fs::create_directories(r / "aclImdb" / "test" / "neg");
    const std::string review = "a fine film";
    const auto* bytes = reinterpret_cast<const uint8_t*>(review.data());
    fuzz::write_input("imdb/aclImdb/test/neg/0_1.txt", bytes, review.size());
    return r;
  }();
  fuzz::write_input("imdb/aclImdb/test/pos/1_9.txt", data, size);
  return fuzz::expect_clean([&] { read_imdb(root.string(), "test", 64); });
}
