// The data a run trains and evaluates on, read from DataConfig (train/config.h) through the
// dataset registry (datasets/dataset_registry.h): the dataset's task kind, its splits or its
// corpus, its content length, and the example limits of small-scale runs. Missing files are user
// errors that say how to get the data (`relpos data prepare ...` or where to download).
#pragma once

#include <cstdint>
#include <string>

#include "core/task_kind.h"
#include "datasets/char_corpus.h"
#include "datasets/dataset.h"
#include "train/config.h"

namespace relpos {

// What data.dataset is for: classification or language modelling.
TaskKind dataset_task_kind(const DataConfig& data);

// split: "train", "val" or "test" of a classification dataset, limited to data.train_limit or
// data.eval_limit examples.
Dataset load_split(const DataConfig& data, const std::string& split);

// The train, valid and test streams of a language-modelling dataset.
CharCorpus load_corpus(const DataConfig& data);

// The content length sequences are padded or cut to: data.max_len, else the dataset's default
// (its LRA length; for the MNIST family (28 / image_pool)^2).
int64_t content_length(const DataConfig& data);

// True for datasets whose examples are document pairs.
bool is_pair_dataset(const DataConfig& data);

}  // namespace relpos
