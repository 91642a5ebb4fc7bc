// A byte corpus split by Transformer-XL's rule, and its language-model batches.
#include "datasets/char_corpus.h"
#include "datasets/lm_batches.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace relpos;
  const std::string path = fuzz::write_input("corpus.txt", data, size);
  return fuzz::expect_clean([&] {
    const int64_t part = static_cast<int64_t>(size / 10);
    const CharCorpus corpus = read_byte_corpus(path, {.valid = part, .test = part});
    const LmBatches batches(corpus.train, 3, 5);
    for (int64_t s = 0; s < batches.num_segments(); ++s) batches.segment(s);
    for (int64_t s = 0; s < batches.num_tail_segments(); ++s) batches.tail_segment(s);
  });
}
