// Reading HDF5 checkpoints (checkpoint.h) through the HDF5 C API: every id is held by an
// H5Handle, HDF5's own error printing is silenced, and anything missing, truncated or of an
// unsupported type is a relpos::Error naming the file and the entry.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>

#include "core/error.h"
#include "core/filesystem_error.h"
#include "datasets/hdf5_handle.h"
#include "train/checkpoint.h"
#include "train/checkpoint_hdf5.h"

namespace relpos {

namespace {

namespace fs = std::filesystem;
using namespace checkpoint_detail;

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

  // The object `name` under `parent`, which must be of type `want`: an object HDF5 cannot open
  // (its header damaged) is damage, another type is a misplaced entry.
  H5Handle open(hid_t parent, const std::string& name, const std::string& where, H5I_type_t want,
                H5Handle::Closer close) const {
    H5Handle object(H5Oopen(parent, name.c_str(), H5P_DEFAULT), close);
    if (!object.valid()) damaged("'" + where + "'");
    if (H5Iget_type(object.get()) != want)
      error("'" + where + "' is not a " + (want == H5I_GROUP ? "group" : "dataset"));
    return object;
  }

  // The group /<name>, or an invalid handle when it does not exist.
  H5Handle group(hid_t parent, const std::string& name, const std::string& where) const {
    const htri_t exists = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
    if (exists < 0) damaged("group '" + where + "'");
    if (exists == 0) return H5Handle(-1, H5Gclose);
    return open(parent, name, where, H5I_GROUP, H5Gclose);
  }

  struct Dataset {
    H5Handle data{-1, H5Dclose};
    H5Handle type{-1, H5Tclose};
    Shape shape;
  };

  Dataset dataset(hid_t group, const std::string& name, const std::string& where) const {
    Dataset d;
    d.data = open(group, name, where, H5I_DATASET, H5Dclose);
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
        data->ints[name] = integer(attribute.get(), type.get(), where);
      } else if (kind == H5T_FLOAT) {
        double value = 0;
        if (H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value) < 0) damaged(where);
        data->floats[name] = value;
      } else {
        data->texts[name] = text(attribute.get(), type.get(), where);
      }
    }
  }

  // An integer attribute as i64; an unsigned value past its range is refused (HDF5's
  // conversion would clamp it).
  int64_t integer(hid_t attribute, hid_t type, const std::string& where) const {
    if (H5Tget_sign(type) == H5T_SGN_NONE) {
      uint64_t value = 0;
      if (H5Aread(attribute, H5T_NATIVE_UINT64, &value) < 0) damaged(where);
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        error(fmt::format("{} is {}, more than an i64 holds", where, value));
      return static_cast<int64_t>(value);
    }
    int64_t value = 0;
    if (H5Aread(attribute, H5T_NATIVE_INT64, &value) < 0) damaged(where);
    return value;
  }

  // A fixed-length string attribute. Variable-length strings live in HDF5's global heap, the
  // one structure without a checksum, whose reader crashes on damaged bytes (found by
  // tests/fuzz/fuzz_checkpoint): refused unread.
  std::string text(hid_t attribute, hid_t type, const std::string& where) const {
    if (H5Tis_variable_str(type) != 0)
      error(where +
            " is a variable-length string (HDF5's unchecksummed global heap); relpos reads "
            "fixed-length strings (from h5py: attrs.create(name, text.encode(), "
            "dtype=h5py.string_dtype('utf-8', len(text.encode()) + 1)))");
    std::vector<char> chars(H5Tget_size(type) + 1, '\0');
    if (H5Aread(attribute, type, chars.data()) < 0) damaged(where);
    // The text ends at the first NUL; padding may follow, nothing else.
    const std::string text(chars.data());
    if (std::any_of(chars.begin() + static_cast<std::ptrdiff_t>(text.size()), chars.end(),
                    [](char c) { return c != '\0'; }))
      error(where + " holds a NUL byte inside its text");
    return text;
  }

 private:
  std::string path_;
};

// The checkpoint at `path` opened for reading (HDF5's messages off while `quiet` lives), its
// format and its /params group checked.
H5Handle open_checkpoint(const Reader& reader, const std::string& path) {
  std::error_code error;  // ENOENT is "no such file"; another cause (a name too long) is named
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) reader.error(why_missing(error));
  if (!fs::is_regular_file(status)) reader.error("not a regular file");
  if (const auto why = unchecksummed_format(path)) reader.error(*why);
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) reader.error("cannot be opened as HDF5 (truncated or damaged file)");
  const htri_t has_params = H5Lexists(file.get(), "params", H5P_DEFAULT);
  if (has_params < 0) reader.damaged("the root group");
  if (has_params == 0) reader.error("no /params group (not a relpos checkpoint)");
  return file;
}

}  // namespace

CheckpointData read_checkpoint(const std::string& path) {
  const Reader reader(path);
  const H5QuietErrors quiet;
  const H5Handle file = open_checkpoint(reader, path);
  CheckpointData data;
  data.params = reader.tensors(file.get(), "params");
  data.buffers = reader.tensors(file.get(), "buffers");
  reader.optimizer(file.get(), &data);
  reader.generators(file.get(), &data);
  reader.counters(file.get(), &data);
  data.state = reader.tensors(file.get(), "state");
  reader.attributes(file.get(), &data);
  return data;
}

CheckpointData read_checkpoint_attributes(const std::string& path) {
  const Reader reader(path);
  const H5QuietErrors quiet;
  CheckpointData data;
  reader.attributes(open_checkpoint(reader, path).get(), &data);
  return data;
}

}  // namespace relpos
