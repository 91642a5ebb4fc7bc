// A CIFAR-10 binary batch (records of 1 label + 3072 pixel bytes).
#include "datasets/cifar.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  const std::string path = fuzz::write_input("data_batch_1.bin", data, size);
  return fuzz::expect_clean([&] {
    std::vector<Example> out;
    read_cifar10_batch(path, out);
  });
}
