// The `aan` dataset (LRA Retrieval): pairs of papers from the ACL Anthology Network, labelled 1
// when one cites the other, read from LRA's new_aan_pairs.{train,eval,test}.tsv by datasets/aan.h.
// Each document is cut at 4,000 bytes by default.
#include "datasets/aan.h"
#include "datasets/dataset_registry.h"

namespace relpos {

namespace {

class AanSource final : public DatasetSource {
 public:
  explicit AanSource(const Options&) {}
  int64_t default_length() const override { return 4000; }
  bool pairs() const override { return true; }
  Dataset read_split(const DataFolder& folder, const std::string& split,
                     int64_t max_len) const override {
    const std::string file = "new_aan_pairs." + std::string(split == "val" ? "eval" : split);
    return read_aan(folder.file(file + ".tsv"), max_len);
  }
};

}  // namespace

RELPOS_REGISTER_DATASET(
    "aan",
    {.kind = TaskKind::classification,
     .description = "LRA Retrieval: pairs of ACL papers as bytes, does one cite the other",
     .how_to_get =
         "aan: download the LRA release\n"
         "  https://storage.googleapis.com/long-range-arena/lra_release.gz (a tar.gz archive),\n"
         "  unpack it, and put lra_release/tsv_data/new_aan_pairs.train.tsv,\n"
         "  new_aan_pairs.eval.tsv and new_aan_pairs.test.tsv in DIR (no header; columns label,\n"
         "  id1, id2, text1, text2).",
     .make = make_source<AanSource>,
     .prepare = nullptr});

}  // namespace relpos
