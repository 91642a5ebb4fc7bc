// What the checkpoint writer and reader share (checkpoint_write.cpp, checkpoint_read.cpp): the
// HDF5 type of each dtype and the dtype of each HDF5 type.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>

#include "core/dtype.h"

namespace relpos::checkpoint_detail {

// The file type (little-endian, numpy's default) and the memory type of a dtype.
hid_t file_type(DType t);
hid_t memory_type(DType t);
// The dtype an HDF5 type reads as, or nothing when relpos has no such dtype.
std::optional<DType> dtype_of_type(hid_t type);
// "16-bit unsigned integer", "string", ... for error messages.
std::string describe_type(hid_t type);

}  // namespace relpos::checkpoint_detail
