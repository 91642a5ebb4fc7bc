// Byte corpus reading, splitting and the byte -> id map (datasets/char_corpus.h).
#include "datasets/char_corpus.h"

#include <array>
#include <filesystem>

#include "datasets/read_error.h"

namespace relpos {

namespace {

const char* const kReader = "char_corpus";

// The corpus of three splits, ids by rank among the training bytes (or every split's); `paths`
// name the splits' sources in errors and `offsets` where each split starts in its source.
CharCorpus encode_splits(const std::vector<const std::vector<uint8_t>*>& splits,
                         const std::vector<std::string>& paths, const std::vector<int64_t>& offsets,
                         bool all_splits = false) {
  std::array<bool, 256> present{};
  for (size_t s = 0; s < (all_splits ? splits.size() : 1); ++s)
    for (const uint8_t byte : *splits[s]) present[byte] = true;
  std::array<int, 256> id_of{};  // -1: unseen in training
  CharCorpus corpus;
  corpus.sources = paths;
  for (int b = 0; b < 256; ++b) {
    id_of[static_cast<size_t>(b)] = present[static_cast<size_t>(b)] ? corpus.vocab_size : -1;
    if (present[static_cast<size_t>(b)]) {
      corpus.symbols.push_back(static_cast<uint8_t>(b));
      ++corpus.vocab_size;
    }
  }
  std::vector<uint8_t>* outs[3] = {&corpus.train, &corpus.valid, &corpus.test};
  for (size_t s = 0; s < 3; ++s) {
    const std::vector<uint8_t>& bytes = *splits[s];
    outs[s]->resize(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i) {
      const int id = id_of[bytes[i]];
      if (id < 0)
        read_error(kReader, paths[s], at_byte(offsets[s] + static_cast<int64_t>(i)),
                   "byte " + std::to_string(bytes[i]) + " does not occur in the training split");
      (*outs[s])[i] = static_cast<uint8_t>(id);
    }
  }
  return corpus;
}

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
  const std::vector<uint8_t> train(bytes.begin(), bytes.begin() + train_end);
  const std::vector<uint8_t> valid(bytes.begin() + train_end, bytes.begin() + valid_end);
  const std::vector<uint8_t> test(bytes.begin() + valid_end, bytes.end());
  return encode_splits({&train, &valid, &test}, {path, path, path}, {0, train_end, valid_end});
}

CharCorpus read_char_splits(const std::string& dir, bool all_splits) {
  const std::filesystem::path root(dir);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::string> paths;
  for (const char* name : {"train.txt", "valid.txt", "test.txt"}) {
    paths.push_back((root / name).string());
    bytes.push_back(read_file_bytes(kReader, paths.back()));
    if (bytes.back().empty()) read_error(kReader, paths.back(), at_byte(0), "a non-empty split");
  }
  return encode_splits({&bytes[0], &bytes[1], &bytes[2]}, paths, {0, 0, 0}, all_splits);
}

CharCorpus read_byte_corpus(const std::string& path, const CorpusSplits& splits) {
  return split_byte_corpus(read_file_bytes(kReader, path), splits, path);
}

}  // namespace relpos
