// Validation carved from the training split (datasets/val_from_train.h).
#include "datasets/val_from_train.h"

#include <cstdint>
#include <iterator>
#include <vector>

#include "core/error.h"

namespace relpos {

namespace {

// The head (1 - fraction) or the tail (fraction) of a training split.
Dataset carve(Dataset all, double fraction, bool tail, const std::string& name) {
  const auto n = static_cast<int64_t>(all.examples.size());
  const auto n_tail = static_cast<int64_t>(static_cast<double>(n) * fraction);
  auto begin = all.examples.begin() + (tail ? n - n_tail : 0);
  auto end = tail ? all.examples.end() : all.examples.end() - n_tail;
  all.examples = std::vector<Example>(std::make_move_iterator(begin), std::make_move_iterator(end));
  all.name = name;
  return all;
}

}  // namespace

double read_val_fraction(const Options& own) {
  const auto fraction = own.get<double>("val_fraction", 0.1);
  RELPOS_CHECK(fraction >= 0 && fraction < 1, "config",
               "data.val_fraction must be in [0, 1), got {}", fraction);
  return fraction;
}

Dataset split_of_train(const std::string& dataset, const std::string& split, double val_fraction,
                       const std::function<Dataset(const std::string&)>& read) {
  if (split == "test") return read("test");
  if (val_fraction == 0) return read(split == "val" ? "test" : "train");
  return carve(read("train"), val_fraction, split == "val", dataset + "/" + split);
}

}  // namespace relpos
