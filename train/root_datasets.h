// Named tensors as datasets at the root of an HDF5 file, which h5py reads without relpos: the
// files of `relpos eval --predictions` and `relpos export reference`. Written to a temporary
// file, every HDF5 call and the close checked, and renamed onto the target; the file's folder is
// made.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace relpos {

// Each tensor (f32, f64 or i64, other dtypes as f32; any device) as a dataset of its name and
// shape. Errors read "[component] cannot ...", naming the file and the system's reason.
void write_root_datasets(const std::string& component, const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& datasets);

}  // namespace relpos
