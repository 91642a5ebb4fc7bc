// Byte corpus reading, splitting and the byte -> id map (datasets/char_corpus.h).
#include "datasets/char_corpus.h"

#include <array>

#include "datasets/read_error.h"

namespace relpos {

namespace {

const char* const kReader = "char_corpus";

}  // namespace

CharCorpus split_byte_corpus(const std::vector<uint8_t>& bytes, const CorpusSplits& splits,
                             const std::string& path) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (splits.valid < 0 || splits.test < 0)
    read_error(kReader, path, "split",
               "split sizes must be non-negative, got valid " + std::to_string(splits.valid) +
                   ", test " + std::to_string(splits.test));
  if (size <= splits.valid + splits.test)
    read_error(kReader, path, at_byte(size),
               "corpus of " + std::to_string(size) + " bytes is not larger than valid + test (" +
                   std::to_string(splits.valid) + " + " + std::to_string(splits.test) +
                   " bytes); no training bytes left");
  const int64_t train_end = size - splits.valid - splits.test;
  const int64_t valid_end = size - splits.test;

  // id of each byte: its rank among the bytes present in the training split; -1 = unseen.
  std::array<bool, 256> present{};
  for (int64_t i = 0; i < train_end; ++i) present[bytes[static_cast<size_t>(i)]] = true;
  std::array<int, 256> id_of{};
  CharCorpus corpus;
  for (int b = 0; b < 256; ++b) {
    id_of[static_cast<size_t>(b)] = present[static_cast<size_t>(b)] ? corpus.vocab_size : -1;
    if (present[static_cast<size_t>(b)]) {
      corpus.symbols.push_back(static_cast<uint8_t>(b));
      ++corpus.vocab_size;
    }
  }
  const auto encode = [&](int64_t begin, int64_t end, std::vector<uint8_t>& out) {
    out.resize(static_cast<size_t>(end - begin));
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t byte = bytes[static_cast<size_t>(i)];
      const int id = id_of[byte];
      if (id < 0)
        read_error(kReader, path, at_byte(i),
                   "byte " + std::to_string(byte) + " does not occur in the training split");
      out[static_cast<size_t>(i - begin)] = static_cast<uint8_t>(id);
    }
  };
  encode(0, train_end, corpus.train);
  encode(train_end, valid_end, corpus.valid);
  encode(valid_end, size, corpus.test);
  return corpus;
}

CharCorpus read_byte_corpus(const std::string& path, const CorpusSplits& splits) {
  return split_byte_corpus(read_file_bytes(kReader, path), splits, path);
}

}  // namespace relpos
