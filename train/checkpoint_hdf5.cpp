// dtype <-> HDF5 type (train/checkpoint_hdf5.h).
#include "train/checkpoint_hdf5.h"

#include <fmt/format.h>

namespace relpos::checkpoint_detail {

// The file type (little-endian, numpy's default) and the memory type of each dtype, indexed in
// DType order: f32, f64, i32, i64, u8.
hid_t file_type(DType t) {
  const hid_t types[] = {H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_STD_I32LE, H5T_STD_I64LE,
                         H5T_STD_U8LE};
  return types[static_cast<size_t>(t)];
}

hid_t memory_type(DType t) {
  const hid_t types[] = {H5T_NATIVE_FLOAT, H5T_NATIVE_DOUBLE, H5T_NATIVE_INT32, H5T_NATIVE_INT64,
                         H5T_NATIVE_UINT8};
  return types[static_cast<size_t>(t)];
}

// The dtype an HDF5 type reads as, or nothing when relpos has no such dtype.
std::optional<DType> dtype_of_type(hid_t type) {
  const size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_FLOAT:
      if (size == 4) return DType::f32;
      if (size == 8) return DType::f64;
      return std::nullopt;
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      if (!is_signed && size == 1) return DType::u8;
      if (is_signed && size == 4) return DType::i32;
      if (is_signed && size == 8) return DType::i64;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// "16-bit unsigned integer", "string", ... for error messages.
std::string describe_type(hid_t type) {
  const size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return fmt::format("{}-bit {} integer", bits,
                         H5Tget_sign(type) == H5T_SGN_2 ? "signed" : "unsigned");
    case H5T_FLOAT:
      return fmt::format("{}-bit float", bits);
    case H5T_STRING:
      return "string";
    case H5T_ENUM:
      return "enum (numpy bool is one)";
    case H5T_COMPOUND:
      return "compound";
    default:
      return fmt::format("HDF5 type class {}", static_cast<int>(H5Tget_class(type)));
  }
}

}  // namespace relpos::checkpoint_detail
