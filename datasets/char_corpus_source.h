// What the character corpora share (datasets/enwik8_dataset.cpp, text8_, moby_dick_, chars_):
// train.txt, valid.txt and test.txt in data.dir, read as one byte stream each
// (datasets/char_corpus.h). One key: `vocabulary`, the splits whose bytes are the symbols:
// train (the default; a byte only validation or test has is an error) or all (as the reference
// Transformer-XL counts its symbols).
#pragma once

#include "datasets/dataset_registry.h"

namespace relpos {

class CharCorpusSource final : public DatasetSource {
 public:
  explicit CharCorpusSource(const Options& own);
  CharCorpus read_corpus(const DataFolder& folder) const override;

 private:
  bool all_splits_ = false;
};

}  // namespace relpos
