// Character-level LM corpora (enwik8 / text8 style, EXPERIMENTS.md "Transformer-XL"): one raw
// byte file split into train / valid / test, as Transformer-XL's prep scripts cut it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

// The last `test` bytes are the test split, the `valid` bytes before them the validation split,
// everything before that the training split. For enwik8 and text8 (10^8 bytes each) the
// defaults give the standard 90M / 5M / 5M.
struct CorpusSplits {
  int64_t valid = 5'000'000;
  int64_t test = 5'000'000;
};

// Ids, not bytes: id = rank of the byte among the distinct bytes of the training split, in
// byte order. Transformer-XL's vocabulary is likewise the symbols present (not all 256), so
// the softmax has the same size as theirs, and a sorted order makes the map independent of
// the text. A valid/test byte absent from training is an error (Transformer-XL cannot encode
// it either).
struct CharCorpus {
  std::vector<uint8_t> train, valid, test;  // ids in [0, vocab_size)
  int64_t vocab_size = 0;
  std::vector<uint8_t> symbols;      // symbols[id] = the byte; size vocab_size
  std::vector<std::string> sources;  // the file of train, valid and test, for errors
};

// Reads the file (".gz" or gzip magic: inflated) and splits it. Errors name the file: a corpus
// not larger than valid + test (no training bytes), negative split sizes, an unseen byte.
CharCorpus read_byte_corpus(const std::string& path, const CorpusSplits& splits = {});

// The same from bytes already in memory; `path` only names the source in errors.
CharCorpus split_byte_corpus(const std::vector<uint8_t>& bytes, const CorpusSplits& splits,
                             const std::string& path);

// The splits `relpos data prepare` writes for a character corpus: DIR/train.txt, valid.txt and
// test.txt, raw bytes. The symbols are the training split's bytes, or with `all_splits` every
// split's. Errors name the file: missing, empty, or a byte unseen in training.
CharCorpus read_char_splits(const std::string& dir, bool all_splits = false);

}  // namespace relpos
