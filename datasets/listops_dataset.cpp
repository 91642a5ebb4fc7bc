// The `listops` dataset (LRA ListOps): LRA's basic_{train,val,test}.tsv read by datasets/listops.h,
// generated here by `relpos data prepare listops` (datasets/prepare_listops.cpp). Own key
// `data.tokenizer`: lra (default) | lra_2021. Sequences are cut at 2,000 tokens by default.
#include "datasets/dataset_registry.h"
#include "datasets/listops.h"
#include "datasets/prepare.h"

namespace relpos {

namespace {

class ListOpsSource final : public DatasetSource {
 public:
  explicit ListOpsSource(const Options& own)
      : tokenizer_(listops_tokenizer_from_name(own.get<std::string>("tokenizer", "lra"))) {}
  int64_t default_length() const override { return 2000; }
  Dataset read_split(const DataFolder& folder, const std::string& split,
                     int64_t max_len) const override {
    return read_listops(folder.file("basic_" + split + ".tsv"), tokenizer_, max_len);
  }

 private:
  ListOpsTokenizer tokenizer_;
};

}  // namespace

RELPOS_REGISTER_DATASET(
    "listops",
    {.kind = TaskKind::classification,
     .description = "LRA ListOps: nested MIN/MAX/MED/SUM_MOD expressions -> their value 0-9",
     .how_to_get =
         "listops is generated here: relpos data prepare listops --out DIR writes\n"
         "  DIR/basic_train.tsv, DIR/basic_val.tsv, DIR/basic_test.tsv (header Source\\tTarget).\n"
         "  Options, LRA's values by default: " +
         listops_prepare_options() + ".",
     .make = make_source<ListOpsSource>,
     .prepare = prepare_listops});

}  // namespace relpos
