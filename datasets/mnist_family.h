// What the MNIST-format datasets share (datasets/mnist_dataset.cpp, fashion_mnist_dataset.cpp):
// four IDX files (raw or .gz) of 28x28 images, validation carved from the training split, and
// their own keys `data.image_pool` (average-pool each image by this factor, a divisor of 28) and
// `data.val_fraction` (datasets/val_from_train.h).
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset_registry.h"

namespace relpos {

// Average-pools every 28x28 image of `dataset` by `factor`: tokens [784] -> [(28/factor)^2], each
// the rounded mean of its factor x factor block.
void pool_images(Dataset& dataset, int64_t factor);

class MnistFamilySource final : public DatasetSource {
 public:
  explicit MnistFamilySource(const Options& own);
  int64_t default_length() const override { return (28 / pool_) * (28 / pool_); }
  bool fixed_length() const override { return true; }
  // train-images-idx3-ubyte + train-labels-idx1-ubyte (train, val), t10k-* (test).
  Dataset read_split(const DataFolder& folder, const std::string& split,
                     int64_t max_len) const override;

 private:
  int64_t pool_;
  double val_fraction_;
};

}  // namespace relpos
