// An AAN retrieval TSV (label, id1, id2, text1, text2).
#include "datasets/aan.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  const std::string path = fuzz::write_input("new_aan_pairs.train.tsv", data, size);
  return fuzz::expect_clean([&] { read_aan(path, 64); });
}
