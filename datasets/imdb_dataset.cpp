// The `imdb` dataset (LRA Text): movie reviews as byte tokens, positive or negative, read from the
// unpacked aclImdb/ by datasets/imdb.h. IMDB has no validation split: it is carved from the
// training split (own key `data.val_fraction`, datasets/val_from_train.h). Reviews are cut at
// 1,000 bytes by default.
#include <filesystem>

#include "datasets/dataset_registry.h"
#include "datasets/imdb.h"
#include "datasets/val_from_train.h"

namespace relpos {

namespace {

class ImdbSource final : public DatasetSource {
 public:
  explicit ImdbSource(const Options& own) : val_fraction_(read_val_fraction(own)) {}
  int64_t default_length() const override { return 1000; }
  Dataset read_split(const DataFolder& folder, const std::string& split,
                     int64_t max_len) const override {
    const std::filesystem::path dir(folder.dir);
    if (!std::filesystem::is_directory(dir / "aclImdb") &&
        !std::filesystem::is_directory(dir / "train"))
      folder.missing("aclImdb/");
    return split_of_train(folder.dataset, split, val_fraction_,
                          [&](const std::string& s) { return read_imdb(folder.dir, s, max_len); });
  }

 private:
  double val_fraction_;
};

}  // namespace

RELPOS_REGISTER_DATASET(
    "imdb",
    {.kind = TaskKind::classification,
     .description = "LRA Text: IMDB movie reviews as bytes, positive or negative",
     .how_to_get =
         "imdb: download https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz and\n"
         "  unpack it (tar xzf aclImdb_v1.tar.gz) so that DIR/aclImdb/train/pos/*.txt,\n"
         "  DIR/aclImdb/train/neg/*.txt, DIR/aclImdb/test/pos/*.txt, DIR/aclImdb/test/neg/*.txt\n"
         "  exist (25,000 train and 25,000 test reviews).",
     .make = make_source<ImdbSource>,
     .prepare = nullptr});

}  // namespace relpos
