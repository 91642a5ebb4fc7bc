// What the character corpora share (datasets/enwik8_dataset.cpp, text8_, moby_dick_, chars_):
// train.txt, valid.txt and test.txt in data.dir, read as one byte stream each
// (datasets/char_corpus.h). No keys of their own.
#pragma once

#include "datasets/dataset_registry.h"

namespace relpos {

class CharCorpusSource final : public DatasetSource {
 public:
  explicit CharCorpusSource(const Options&) {}
  CharCorpus read_corpus(const DataFolder& folder) const override;
};

}  // namespace relpos
