// HDF5 files of named tensors (train/root_datasets.h).
#include "train/root_datasets.h"

#include <hdf5.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/file_write.h"
#include "core/ops.h"
#include "datasets/hdf5_handle.h"

namespace relpos {

namespace {

void write_dataset(const std::string& component, hid_t file, const char* name, const Tensor& t,
                   hid_t file_type, hid_t memory_type, const std::string& path) {
  std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
  H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  H5Handle data(
      H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  const Tensor c = t.contiguous();
  RELPOS_CHECK(data.valid() && H5Dwrite(data.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                        c.raw_data()) >= 0,
               component, "cannot write dataset '{}' to '{}'{}", name, path, hdf5_system_error());
}

}  // namespace

void write_root_datasets(const std::string& component, const std::string& named,
                         const std::vector<std::pair<std::string, Tensor>>& datasets) {
  namespace fs = std::filesystem;
  make_file_folder(component, named);
  const std::string path = atomic_write_target(component, named);
  const fs::path target(path);
  const std::string temp = temporary_of(path);
  std::error_code removed;  // removing the temporary file is best effort
  H5QuietErrors quiet;
  {
    const H5Handle access = checksummed_file_access(component);
    H5Handle file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);
    RELPOS_CHECK(file.valid(), component, "cannot create '{}'{}", temp, hdf5_system_error());
    try {
      for (const auto& [name, t] : datasets) {
        RELPOS_CHECK(t.defined(), component, "dataset '{}' is empty", name);
        const Tensor cpu = t.to(Device::cpu());
        if (cpu.dtype() == DType::i64)
          write_dataset(component, file.get(), name.c_str(), cpu, H5T_STD_I64LE, H5T_NATIVE_INT64,
                        path);
        else if (cpu.dtype() == DType::f64)
          write_dataset(component, file.get(), name.c_str(), cpu, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                        path);
        else
          write_dataset(component, file.get(), name.c_str(), cpu.to(DType::f32), H5T_IEEE_F32LE,
                        H5T_NATIVE_FLOAT, path);
      }
    } catch (...) {
      file.reset();
      fs::remove(temp, removed);
      throw;
    }
    if (!file.reset()) {
      const std::string reason = hdf5_system_error();
      fs::remove(temp, removed);
      fail(component, "cannot finish writing '{}'{}", path, reason);
    }
  }
  if (const int error = fsync_path(temp, false); error != 0) {
    fs::remove(temp, removed);
    fail(component, "cannot write '{}': {}", path, std::strerror(error));
  }
  std::error_code renamed;
  fs::rename(temp, target, renamed);
  if (renamed) {
    fs::remove(temp, removed);
    fail(component, "cannot rename '{}' onto '{}': {}", temp, path, renamed.message());
  }
  fsync_folder_of(path);
  remove_stale_temporaries(path);
}

}  // namespace relpos
