// The character corpora's reading (datasets/char_corpus_source.h).
#include "datasets/char_corpus_source.h"

#include <filesystem>

#include "core/error.h"

namespace relpos {

CharCorpusSource::CharCorpusSource(const Options& own) {
  const auto vocabulary = own.get<std::string>("vocabulary", "train");
  RELPOS_CHECK(vocabulary == "train" || vocabulary == "all", "data",
               "data.vocabulary must be train (the training split's bytes) or all (every "
               "split's), got '{}'",
               vocabulary);
  all_splits_ = vocabulary == "all";
}

CharCorpus CharCorpusSource::read_corpus(const DataFolder& folder) const {
  const std::filesystem::path train = std::filesystem::path(folder.dir) / "train.txt";
  if (!std::filesystem::exists(train)) {
    folder.refuse_broken_link("train.txt");
    fail<DataMissing>("data", "no {} ({} has no prepared splits): {}", train.string(),
                      folder.dataset, folder.how_to_get());
  }
  return read_char_splits(folder.dir, all_splits_);
}

}  // namespace relpos
