// The splits a run trains and evaluates on, read from DataConfig (train/config.h): which reader,
// which files under data.dir, where the validation split comes from when the dataset has none,
// image pooling for the MNIST family, and the example limits of small-scale runs. Missing files
// are user errors that say how to get the data (`relpos data prepare ...` or where to download).
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.h"
#include "train/config.h"

namespace relpos {

// split: "train", "val" or "test".
Dataset load_split(const DataConfig& data, const std::string& split);

// The content length sequences are padded or cut to: data.max_len, else the dataset's LRA length
// (mnist family 784 / image_pool², listops 2000, imdb 1000, aan 4000 per document, cifar10 1024).
int64_t content_length(const DataConfig& data);

// True for datasets whose examples are document pairs (aan).
bool is_pair_dataset(const DataConfig& data);

}  // namespace relpos
