// The data of a run through the dataset registry (train/task_data.h).
#include "train/task_data.h"

#include <filesystem>

#include "core/error.h"
#include "datasets/dataset_registry.h"

namespace relpos {

namespace {

constexpr const char* kWho = "data";

DataFolder folder_of(const DataConfig& data) {
  return {data.dataset, data.dir};
}

}  // namespace

TaskKind dataset_task_kind(const DataConfig& data) {
  return dataset_registry().at(data.dataset).kind;
}

int64_t content_length(const DataConfig& data) {
  const auto source = make_dataset_source(data.dataset, data.own);
  const int64_t fixed = source->fixed_length() ? source->default_length() : 0;
  // Image readers ignored it: the model was built for data.max_len tokens and failed at step 1.
  RELPOS_CHECK(data.max_len == 0 || fixed == 0 || data.max_len == fixed, "config",
               "data.max_len {} cannot apply to dataset '{}': each of its examples is an image "
               "of {} tokens; remove data.max_len",
               data.max_len, data.dataset, fixed);
  return data.max_len > 0 ? data.max_len : source->default_length();
}

bool is_pair_dataset(const DataConfig& data) {
  return make_dataset_source(data.dataset, data.own)->pairs();
}

Dataset load_split(const DataConfig& data, const std::string& split) {
  RELPOS_CHECK(split == "train" || split == "val" || split == "test", kWho,
               "unknown split '{}'; known: train, val, test", split);
  const DataFolder folder = folder_of(data);
  if (!std::filesystem::is_directory(data.dir))
    fail<DataMissing>(kWho, "no folder '{}' for {}: {}", data.dir, data.dataset,
                      folder.how_to_get());
  Dataset d =
      make_dataset_source(data.dataset, data.own)->read_split(folder, split, content_length(data));
  const int64_t limit = split == "train" ? data.train_limit : data.eval_limit;
  if (limit > 0 && static_cast<int64_t>(d.examples.size()) > limit) d.examples.resize(limit);
  RELPOS_CHECK(!d.examples.empty(), kWho, "the {} split of '{}' in '{}' is empty", split,
               data.dataset, data.dir);
  return d;
}

CharCorpus load_corpus(const DataConfig& data) {
  return make_dataset_source(data.dataset, data.own)->read_corpus(folder_of(data));
}

}  // namespace relpos
