// The character corpora's reading (datasets/char_corpus_source.h).
#include "datasets/char_corpus_source.h"

#include <filesystem>

#include "core/error.h"

namespace relpos {

CharCorpus CharCorpusSource::read_corpus(const DataFolder& folder) const {
  const std::filesystem::path train = std::filesystem::path(folder.dir) / "train.txt";
  if (!std::filesystem::exists(train))
    fail<DataMissing>("data", "no {} ({} has no prepared splits): {}", train.string(),
                      folder.dataset, folder.how_to_get());
  return read_char_splits(folder.dir);
}

}  // namespace relpos
