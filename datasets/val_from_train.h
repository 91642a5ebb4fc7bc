// The validation split of a dataset that ships only train and test: the tail of its training
// split, sized by its own `data.val_fraction` key (default 0.1; 0: validate on the test split, as
// the LRA Text setup does).
#pragma once

#include <functional>
#include <string>

#include "core/options.h"
#include "datasets/dataset.h"

namespace relpos {

// data.val_fraction from the dataset's own keys, checked to be in [0, 1).
double read_val_fraction(const Options& own);

// Split "train" (the head, 1 - fraction of it), "val" (the tail) or "test" of a dataset whose
// `read` knows "train" and "test"; `dataset` names the carved splits ("mnist/val").
Dataset split_of_train(const std::string& dataset, const std::string& split, double val_fraction,
                       const std::function<Dataset(const std::string&)>& read);

}  // namespace relpos
