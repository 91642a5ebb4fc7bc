// A ListOps TSV through both tokenizers.
#include "datasets/listops.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  const std::string path = fuzz::write_input("basic_train.tsv", data, size);
  fuzz::expect_clean([&] { read_listops(path, ListOpsTokenizer::lra, 64); });
  return fuzz::expect_clean([&] { read_listops(path, ListOpsTokenizer::lra_2021, 64); });
}
