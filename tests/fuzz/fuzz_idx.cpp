// IDX files (raw or gzip by their magic) through the MNIST pair reader with the 28 x 28 geometry
// the training path relies on: the bytes are the images file, a fixed valid labels file beside.
#include "datasets/idx.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  static const std::string labels = [] {
    const std::vector<uint8_t> two{0, 0, 8, 1, 0, 0, 0, 2, 3, 7};  // IDX [2] labels 3, 7
    return fuzz::write_input("labels", two.data(), two.size());
  }();
  const std::string images = fuzz::write_input("images", data, size);
  return fuzz::expect_clean([&] {
    read_idx("fuzz", images);
    read_mnist(images, labels, "mnist/fuzz", 28, 28);
  });
}
