// HDF5 checkpoints (checkpoint.h) through the HDF5 C API: every id is held by an H5Handle,
// HDF5's own error printing is silenced, and each failure is a relpos::Error naming the file.
#include "train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "core/error.h"
#include "datasets/hdf5_handle.h"

namespace relpos {

namespace {

namespace fs = std::filesystem;

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

// A file descriptor closed on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// ---- writing ----

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path) {}

  [[noreturn]] void error(const std::string& reason) const {
    fail("checkpoint", "cannot write '{}': {}", path_, reason);
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
    H5Handle data(space.valid() ? H5Dcreate2(group, name.c_str(), file, space.get(), H5P_DEFAULT,
                                             H5P_DEFAULT, H5P_DEFAULT)
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
    // Variable-length UTF-8: h5py returns these as str.
    H5Handle text(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!text.valid() || H5Tset_size(text.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(text.get(), H5T_CSET_UTF8) < 0)
      error("cannot make the string type");
    for (const auto& [name, value] : data.texts) {
      if (value.find('\0') != std::string::npos)
        error("text attribute '" + name + "' contains a NUL character");
      const char* chars = value.c_str();
      attribute(file, name, text.get(), &chars, &seen);
    }
  }

  // The whole file, closed (flushed) on return.
  void file(const std::string& temp, const CheckpointData& data) const {
    H5Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // Strong: H5Fclose closes the file even if an id were left open, so it is complete on disk.
    if (!access.valid() || H5Pset_fclose_degree(access.get(), H5F_CLOSE_STRONG) < 0)
      error("cannot set up file access");
    H5Handle file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);
    if (!file.valid()) error("cannot create the temporary file '" + temp + "'");
    tensors(file.get(), "params", data.params);
    tensors(file.get(), "buffers", data.buffers);
    optimizer(file.get(), data);
    generators(file.get(), data);
    counters(file.get(), data);
    attributes(file.get(), data);
    if (!file.reset()) error("cannot close (flush) the temporary file '" + temp + "'");
  }

 private:
  std::string path_;
};

// fsync of a file or a folder; returns 0 or errno.
int sync_path(const std::string& path, bool folder) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (folder ? O_DIRECTORY : 0)));
  if (fd.get() < 0) return errno;
  return ::fsync(fd.get()) == 0 ? 0 : errno;
}

// ---- reading ----

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void error(const std::string& what) const {
    fail("checkpoint", "'{}': {}", path_, what);
  }
  [[noreturn]] void damaged(const std::string& what) const {
    error(what + " cannot be read (truncated or damaged file)");
  }

  // The names of a group's links, in creation order when the file tracks it, else by name.
  std::vector<std::string> names(hid_t group, const std::string& where) const {
    H5G_info_t info;
    if (H5Gget_info(group, &info) < 0) damaged("group '" + where + "'");
    H5Handle properties(H5Gget_create_plist(group), H5Pclose);
    unsigned order = 0;
    if (properties.valid() && H5Pget_link_creation_order(properties.get(), &order) < 0) order = 0;
    const H5_index_t index = (order & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    std::vector<std::string> out;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      const ssize_t size =
          H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (size < 0) damaged("group '" + where + "'");
      std::vector<char> name(static_cast<size_t>(size) + 1, '\0');
      if (H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, name.data(), name.size(),
                             H5P_DEFAULT) < 0)
        damaged("group '" + where + "'");
      out.emplace_back(name.data(), static_cast<size_t>(size));
    }
    return out;
  }

  // The group /<name>, or an invalid handle when it does not exist.
  H5Handle group(hid_t parent, const std::string& name, const std::string& where) const {
    const htri_t exists = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
    if (exists < 0) damaged("group '" + where + "'");
    if (exists == 0) return H5Handle(-1, H5Gclose);
    H5Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.valid()) error("'" + where + "' is not a group");
    return g;
  }

  struct Dataset {
    H5Handle data{-1, H5Dclose};
    H5Handle type{-1, H5Tclose};
    Shape shape;
  };

  Dataset dataset(hid_t group, const std::string& name, const std::string& where) const {
    Dataset d;
    d.data = H5Handle(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!d.data.valid()) error("'" + where + "' is not a dataset");
    d.type = H5Handle(H5Dget_type(d.data.get()), H5Tclose);
    const H5Handle space(H5Dget_space(d.data.get()), H5Sclose);
    if (!d.type.valid() || !space.valid()) damaged("dataset '" + where + "'");
    const H5S_class_t kind = H5Sget_simple_extent_type(space.get());
    if (kind == H5S_SIMPLE) {
      const int rank = H5Sget_simple_extent_ndims(space.get());
      std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
      if (rank < 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
        damaged("dataset '" + where + "'");
      d.shape.assign(dims.begin(), dims.end());
    } else if (kind != H5S_SCALAR) {
      error("dataset '" + where + "' has no elements (a null dataspace)");
    }
    return d;
  }

  Tensor tensor(hid_t group, const std::string& name, const std::string& where) const {
    const Dataset d = dataset(group, name, where);
    const std::optional<DType> dtype = dtype_of_type(d.type.get());
    if (!dtype)
      error(
          fmt::format("dataset '{}' has an unsupported type ({}); expected f32, f64, i32, i64 "
                      "or u8",
                      where, describe_type(d.type.get())));
    Tensor t = Tensor::empty(d.shape, *dtype);
    if (t.numel() > 0 &&
        H5Dread(d.data.get(), memory_type(*dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) < 0)
      damaged("dataset '" + where + "'");
    return t;
  }

  // An integer dataset of `shape`, read as `memory` into `out`.
  void integers(hid_t group, const std::string& name, const std::string& where, const Shape& shape,
                hid_t memory, void* out, const char* expected) const {
    const Dataset d = dataset(group, name, where);
    if (H5Tget_class(d.type.get()) != H5T_INTEGER || d.shape != shape)
      error(fmt::format("dataset '{}' is a {} of shape {}, expected {}", where,
                        describe_type(d.type.get()), shape_str(d.shape), expected));
    if (H5Dread(d.data.get(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
      damaged("dataset '" + where + "'");
  }

  // Every dataset of /<group_name> (absent: none).
  std::vector<std::pair<std::string, Tensor>> tensors(hid_t file, const char* group_name) const {
    const std::string where = std::string("/") + group_name;
    std::vector<std::pair<std::string, Tensor>> out;
    const H5Handle g = group(file, group_name, where);
    if (!g.valid()) return out;
    for (const std::string& name : names(g.get(), where))
      out.emplace_back(name, tensor(g.get(), name, where + "/" + name));
    return out;
  }

  void optimizer(hid_t file, CheckpointData* data) const {
    const H5Handle g = group(file, "optimizer", "/optimizer");
    if (!g.valid()) return;
    for (const std::string& name : names(g.get(), "/optimizer")) {
      const std::string where = "/optimizer/" + name;
      const H5Handle param = group(g.get(), name, where);
      std::map<std::string, Tensor> state;
      for (const std::string& key : names(param.get(), where))
        state[key] = tensor(param.get(), key, where + "/" + key);
      data->optimizer.emplace_back(name, std::move(state));
    }
  }

  void generators(hid_t file, CheckpointData* data) const {
    const H5Handle g = group(file, "rng", "/rng");
    if (!g.valid()) return;
    for (const std::string& name : names(g.get(), "/rng")) {
      uint64_t state[2] = {0, 0};
      integers(g.get(), name, "/rng/" + name, {2}, H5T_NATIVE_UINT64, state,
               "integers of shape [2] (seed, offset)");
      Generator gen;
      gen.set_state(state[0], state[1]);
      data->generators.emplace_back(name, gen);
    }
  }

  void counters(hid_t file, CheckpointData* data) const {
    const H5Handle g = group(file, "counters", "/counters");
    if (!g.valid()) return;
    for (const std::string& name : names(g.get(), "/counters")) {
      int64_t value = 0;
      integers(g.get(), name, "/counters/" + name, {}, H5T_NATIVE_INT64, &value,
               "an integer scalar");
      data->counters.emplace_back(name, value);
    }
  }

  // Root attributes: integer, float and string scalars.
  void attributes(hid_t file, CheckpointData* data) const {
    std::vector<std::string> names;
    const auto collect = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    };
    if (H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names) < 0)
      damaged("the root attributes");
    for (const std::string& name : names) {
      const std::string where = "attribute '" + name + "'";
      const H5Handle attribute(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose);
      const H5Handle type(attribute.valid() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
      const H5Handle space(attribute.valid() ? H5Aget_space(attribute.get()) : -1, H5Sclose);
      if (!type.valid() || !space.valid()) damaged(where);
      const H5T_class_t kind = H5Tget_class(type.get());
      if (H5Sget_simple_extent_npoints(space.get()) != 1 ||
          (kind != H5T_INTEGER && kind != H5T_FLOAT && kind != H5T_STRING))
        error(fmt::format("{} is not a scalar integer, float or string ({})", where,
                          describe_type(type.get())));
      if (kind == H5T_INTEGER) {
        int64_t value = 0;
        if (H5Aread(attribute.get(), H5T_NATIVE_INT64, &value) < 0) damaged(where);
        data->ints[name] = value;
      } else if (kind == H5T_FLOAT) {
        double value = 0;
        if (H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value) < 0) damaged(where);
        data->floats[name] = value;
      } else {
        data->texts[name] = text(attribute.get(), type.get(), where);
      }
    }
  }

  // A string attribute, variable-length or fixed-length.
  std::string text(hid_t attribute, hid_t type, const std::string& where) const {
    if (H5Tis_variable_str(type) > 0) {
      H5Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
      if (!memory.valid() || H5Tset_size(memory.get(), H5T_VARIABLE) < 0 ||
          H5Tset_cset(memory.get(), H5Tget_cset(type)) < 0)
        damaged(where);
      char* chars = nullptr;
      if (H5Aread(attribute, memory.get(), &chars) < 0) damaged(where);
      std::string value = chars != nullptr ? chars : "";
      H5free_memory(chars);
      return value;
    }
    std::vector<char> chars(H5Tget_size(type) + 1, '\0');
    if (H5Aread(attribute, type, chars.data()) < 0) damaged(where);
    return std::string(chars.data());
  }

 private:
  std::string path_;
};

}  // namespace

void write_checkpoint(const std::string& path, const CheckpointData& data) {
  const Writer writer(path);
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  const H5QuietErrors quiet;
  try {
    writer.file(temp, data);
    if (const int e = sync_path(temp, false); e != 0)
      writer.error(fmt::format("cannot fsync '{}': {}", temp, std::strerror(e)));
    if (std::rename(temp.c_str(), path.c_str()) != 0)
      writer.error(fmt::format("cannot rename '{}' onto it: {}", temp, std::strerror(errno)));
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
  // Makes the rename durable. Best effort: the new checkpoint is already in place, and some
  // file systems refuse fsync on a folder.
  const fs::path folder = fs::path(path).parent_path();
  sync_path(folder.empty() ? "." : folder.string(), true);
}

CheckpointData read_checkpoint(const std::string& path) {
  const Reader reader(path);
  std::error_code error;
  if (!fs::exists(path, error)) reader.error("no such file");
  if (!fs::is_regular_file(path, error)) reader.error("not a regular file");
  const H5QuietErrors quiet;
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) reader.error("cannot be opened for reading");
  if (is_hdf5 == 0) reader.error("not an HDF5 file");
  const H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) reader.error("cannot be opened as HDF5 (truncated or damaged file)");
  if (H5Lexists(file.get(), "params", H5P_DEFAULT) <= 0)
    reader.error("no /params group (not a relpos checkpoint)");
  CheckpointData data;
  data.params = reader.tensors(file.get(), "params");
  data.buffers = reader.tensors(file.get(), "buffers");
  reader.optimizer(file.get(), &data);
  reader.generators(file.get(), &data);
  reader.counters(file.get(), &data);
  reader.attributes(file.get(), &data);
  return data;
}

}  // namespace relpos
