// Predictions files for `relpos eval --predictions`: named tensors as HDF5 datasets (h5py reads
// them without relpos), written to a temp file and renamed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace relpos {

// Each tensor (f32, f64 or i64; any device) as a dataset of its name and shape.
void write_predictions(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& datasets);

}  // namespace relpos
