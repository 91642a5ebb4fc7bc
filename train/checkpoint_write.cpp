// Writing HDF5 checkpoints (checkpoint.h) through the HDF5 C API: every id is held by an
// H5Handle, HDF5's own error printing is silenced, each failure is a relpos::Error naming the
// file, and the file is written to a temp name, synced and renamed over the target.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/file_write.h"
#include "datasets/hdf5_handle.h"
#include "train/checkpoint.h"
#include "train/checkpoint_hdf5.h"

namespace relpos {

namespace {

namespace fs = std::filesystem;
using namespace checkpoint_detail;

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path) {}

  // After a failed HDF5 call, the reason names the system's error too (no space left, ...).
  [[noreturn]] void error(const std::string& reason) const {
    fail("checkpoint", "cannot write '{}': {}{}", path_, reason, hdf5_system_error());
  }

  // A group under `parent` that remembers the order its links were created in.
  H5Handle group(hid_t parent, const std::string& name, const std::string& where) const {
    H5Handle properties(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
    if (!properties.valid() ||
        H5Pset_link_creation_order(properties.get(),
                                   H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
      error("cannot set up group '" + where + "'");
    H5Handle group(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
                   H5Gclose);
    if (!group.valid()) error("cannot create group '" + where + "'");
    return group;
  }

  // Checks `name` is one link name, not used before in its group (`seen`).
  void check_name(const std::string& name, const std::string& where,
                  std::set<std::string>* seen) const {
    if (name.empty() || name == "." || name.find('/') != std::string::npos)
      error(
          fmt::format("'{}' in {} is not a valid name (non-empty, no '/', not '.')", name, where));
    if (!seen->insert(name).second) error(fmt::format("{}/{} is given twice", where, name));
  }

  // A dataset holding `values` (row-major, memory type `memory`) with `shape` ({} is a scalar).
  void dataset(hid_t group, const std::string& name, const std::string& where, const Shape& shape,
               hid_t file, hid_t memory, const void* values) const {
    const std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Handle space(shape.empty()
                       ? H5Screate(H5S_SCALAR)
                       : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                   H5Sclose);
    // Non-empty arrays are one chunk with HDF5's Fletcher32 checksum (h5py reads it as it
    // reads any dataset), so a damaged file is reported as damage, naming the dataset.
    H5Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!create.valid()) error("cannot set up dataset '" + where + "'");
    if (!shape.empty() && shape_numel(shape) > 0 &&
        (H5Pset_chunk(create.get(), static_cast<int>(dims.size()), dims.data()) < 0 ||
         H5Pset_fletcher32(create.get()) < 0))
      error("cannot set up the checksum of dataset '" + where + "'");
    H5Handle data(space.valid() ? H5Dcreate2(group, name.c_str(), file, space.get(), H5P_DEFAULT,
                                             create.get(), H5P_DEFAULT)
                                : -1,
                  H5Dclose);
    if (!data.valid()) error("cannot create dataset '" + where + "'");
    if (shape_numel(shape) > 0 &&
        H5Dwrite(data.get(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
      error("cannot write dataset '" + where + "'");
    if (!data.reset()) error("cannot close dataset '" + where + "'");
  }

  void tensor(hid_t group, const std::string& name, const std::string& where,
              const Tensor& t) const {
    if (!t.defined()) error("'" + where + "' is an undefined tensor");
    if (t.dtype() == DType::bf16)
      error("'" + where + "' is bf16, which checkpoints do not hold (they keep f32 masters)");
    const Tensor cpu = t.to(Device::cpu()).contiguous();
    dataset(group, name, where, cpu.shape(), file_type(cpu.dtype()), memory_type(cpu.dtype()),
            cpu.raw_data());
  }

  // Tensors under a new group /<group_name>.
  void tensors(hid_t file, const char* group_name,
               const std::vector<std::pair<std::string, Tensor>>& entries) const {
    const std::string where = std::string("/") + group_name;
    const H5Handle g = group(file, group_name, where);
    std::set<std::string> seen;
    for (const auto& [name, t] : entries) {
      check_name(name, where, &seen);
      tensor(g.get(), name, where + "/" + name, t);
    }
  }

  void optimizer(hid_t file, const CheckpointData& data) const {
    const H5Handle g = group(file, "optimizer", "/optimizer");
    std::set<std::string> seen;
    for (const auto& [name, state] : data.optimizer) {
      check_name(name, "/optimizer", &seen);
      const std::string where = "/optimizer/" + name;
      const H5Handle param = group(g.get(), name, where);
      std::set<std::string> keys;
      for (const auto& [key, t] : state) {
        check_name(key, where, &keys);
        tensor(param.get(), key, where + "/" + key, t);
      }
    }
  }

  void generators(hid_t file, const CheckpointData& data) const {
    const H5Handle g = group(file, "rng", "/rng");
    std::set<std::string> seen;
    for (const auto& [name, gen] : data.generators) {
      check_name(name, "/rng", &seen);
      const uint64_t state[2] = {gen.seed(), gen.offset()};
      dataset(g.get(), name, "/rng/" + name, {2}, H5T_STD_U64LE, H5T_NATIVE_UINT64, state);
    }
  }

  void counters(hid_t file, const CheckpointData& data) const {
    const H5Handle g = group(file, "counters", "/counters");
    std::set<std::string> seen;
    for (const auto& [name, value] : data.counters) {
      check_name(name, "/counters", &seen);
      dataset(g.get(), name, "/counters/" + name, {}, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
    }
  }

  // A scalar attribute of the root group; `type` is both its file and memory type.
  void attribute(hid_t file, const std::string& name, hid_t type, const void* value,
                 std::set<std::string>* seen) const {
    if (name.empty()) error("an attribute has an empty name");
    if (!seen->insert(name).second)
      error("attribute '" + name + "' is given twice (in ints, floats or texts)");
    H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    H5Handle attribute(
        space.valid() ? H5Acreate2(file, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT)
                      : -1,
        H5Aclose);
    if (!attribute.valid() || H5Awrite(attribute.get(), type, value) < 0)
      error("cannot write attribute '" + name + "'");
  }

  void attributes(hid_t file, const CheckpointData& data) const {
    std::set<std::string> seen;
    for (const auto& [name, value] : data.ints)
      attribute(file, name, H5T_NATIVE_INT64, &value, &seen);
    for (const auto& [name, value] : data.floats)
      attribute(file, name, H5T_NATIVE_DOUBLE, &value, &seen);
    // Fixed-length, NUL-terminated UTF-8, stored inside the checksummed object header (a
    // variable-length string would go to HDF5's global heap, which has no checksum); h5py
    // returns them as bytes.
    for (const auto& [name, value] : data.texts) {
      if (value.find('\0') != std::string::npos)
        error("text attribute '" + name + "' contains a NUL character");
      H5Handle text(H5Tcopy(H5T_C_S1), H5Tclose);
      if (!text.valid() || H5Tset_size(text.get(), value.size() + 1) < 0 ||
          H5Tset_strpad(text.get(), H5T_STR_NULLTERM) < 0 ||
          H5Tset_cset(text.get(), H5T_CSET_UTF8) < 0)
        error("cannot make the string type of attribute '" + name + "'");
      attribute(file, name, text.get(), value.c_str(), &seen);
    }
  }

  // The whole file, closed (flushed) on return.
  void file(const std::string& temp, const CheckpointData& data) const {
    const H5Handle access = checksummed_file_access("checkpoint");
    H5Handle file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);
    if (!file.valid()) error("cannot create the temporary file '" + temp + "'");
    tensors(file.get(), "params", data.params);
    tensors(file.get(), "buffers", data.buffers);
    optimizer(file.get(), data);
    generators(file.get(), data);
    counters(file.get(), data);
    tensors(file.get(), "state", data.state);
    attributes(file.get(), data);
    if (!file.reset()) error("cannot close (flush) the temporary file '" + temp + "'");
  }

 private:
  std::string path_;
};

}  // namespace

void write_checkpoint(const std::string& named, const CheckpointData& data) {
  const std::string path = atomic_write_target("checkpoint", named);
  const Writer writer(path);
  const std::string temp = temporary_of(path);
  const H5QuietErrors quiet;
  try {
    writer.file(temp, data);
    if (const int e = fsync_path(temp, false); e != 0)
      writer.error(fmt::format("cannot fsync '{}': {}", temp, std::strerror(e)));
    if (std::rename(temp.c_str(), path.c_str()) != 0)
      writer.error(fmt::format("cannot rename '{}' onto it: {}", temp, std::strerror(errno)));
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
  fsync_folder_of(path);
  remove_stale_temporaries(path);
}

}  // namespace relpos
