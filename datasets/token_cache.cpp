// The HDF5 token cache (see token_cache.h), written and read with the HDF5 C API; every id is
// held by an H5Handle, and every failure on reading is a read_error naming the cache file.
#include "datasets/token_cache.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "datasets/hdf5_handle.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

namespace fs = std::filesystem;
constexpr int64_t kFormatVersion = 1;
constexpr hsize_t kChunk = 1 << 18;  // elements per chunk (1 MiB of i32)

struct SourceStamp {
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

std::optional<SourceStamp> stamp_of(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) return std::nullopt;
  SourceStamp stamp;
  if (fs::is_regular_file(status)) stamp.size = static_cast<int64_t>(fs::file_size(path, error));
  if (error) return std::nullopt;
  const fs::file_time_type mtime = fs::last_write_time(path, error);
  if (error) return std::nullopt;
  stamp.mtime_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  return stamp;
}

[[noreturn]] void write_failed(const std::string& path, const std::string& what) {
  fail("token_cache", "{}: cannot write the cache: {}{}", path, what, hdf5_system_error());
}

template <typename T>
void write_array(hid_t file, const std::string& path, const char* name, const std::vector<T>& v) {
  const hid_t file_type = sizeof(T) == 4 ? H5T_STD_I32LE : H5T_STD_I64LE;
  const hid_t memory_type = sizeof(T) == 4 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64;
  const hsize_t n = v.size();
  H5Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (n > 0) {  // a chunk may not be larger than a fixed-size dataset, so empty ones stay plain
    const hsize_t chunk = std::min(n, kChunk);
    H5Pset_chunk(properties.get(), 1, &chunk);
    H5Pset_fletcher32(properties.get());
  }
  H5Handle data(
      H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
      H5Dclose);
  if (!data.valid() ||
      (n > 0 && H5Dwrite(data.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0))
    write_failed(path, std::string("dataset '") + name + "'");
}

void write_attribute(hid_t file, const std::string& path, const char* name, int64_t value) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attribute(H5Acreate2(file, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value) < 0)
    write_failed(path, std::string("attribute '") + name + "'");
}

void write_attribute(hid_t file, const std::string& path, const char* name,
                     const std::string& value) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);  // with the terminating NUL
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attribute(H5Acreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), value.c_str()) < 0)
    write_failed(path, std::string("attribute '") + name + "'");
}

// Concatenated tokens and offsets of one side (first or second documents).
void flatten(const Dataset& dataset, bool second, std::vector<int32_t>* tokens,
             std::vector<int64_t>* offsets) {
  offsets->assign(1, 0);
  for (const Example& example : dataset.examples) {
    const std::vector<int32_t>& side = second ? example.tokens2 : example.tokens;
    tokens->insert(tokens->end(), side.begin(), side.end());
    offsets->push_back(static_cast<int64_t>(tokens->size()));
  }
}

// ---- reading ----

struct Reader {
  std::string path;
  hid_t file;

  [[noreturn]] void error(const std::string& where, const std::string& what) const {
    read_error("token_cache", path, where, what + " (delete the cache to rebuild it)");
  }

  int64_t integer(const char* name) const {
    const std::string where = std::string("attribute '") + name + "'";
    if (H5Aexists(file, name) <= 0) error(where, "missing");
    H5Handle attribute(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
    int64_t value = 0;
    if (!attribute.valid() || H5Aread(attribute.get(), H5T_NATIVE_INT64, &value) < 0)
      error(where, "an integer");
    return value;
  }

  std::string text(const char* name) const {
    const std::string where = std::string("attribute '") + name + "'";
    if (H5Aexists(file, name) <= 0) error(where, "missing");
    H5Handle attribute(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
    H5Handle type(attribute.valid() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
    if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()))
      error(where, "a fixed-length string");
    std::vector<char> buffer(H5Tget_size(type.get()) + 1, '\0');
    if (H5Aread(attribute.get(), type.get(), buffer.data()) < 0) error(where, "a readable string");
    return std::string(buffer.data());
  }

  template <typename T>
  std::vector<T> array(const char* name) const {
    const std::string where = std::string("dataset '") + name + "'";
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) error(where, "missing");
    H5Handle data(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
    H5Handle space(data.valid() ? H5Dget_space(data.get()) : -1, H5Sclose);
    H5Handle type(data.valid() ? H5Dget_type(data.get()) : -1, H5Tclose);
    if (!space.valid() || !type.valid() || H5Sget_simple_extent_ndims(space.get()) != 1 ||
        H5Tget_class(type.get()) != H5T_INTEGER)
      error(where, "a one-dimensional integer array");
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space.get(), &n, nullptr);
    std::vector<T> values(n);
    const hid_t memory_type = sizeof(T) == 4 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64;
    if (n > 0 && H5Dread(data.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      error(where, "readable data (checksum or read failure)");
    return values;
  }

  // Splits tokens by offsets into examples (side 1 or 2), checking that they agree.
  void unflatten(const char* tokens_name, const char* offsets_name, bool second,
                 Dataset* dataset) const {
    const std::vector<int32_t> tokens = array<int32_t>(tokens_name);
    const std::vector<int64_t> offsets = array<int64_t>(offsets_name);
    const std::string where = std::string("dataset '") + offsets_name + "'";
    if (offsets.size() != dataset->examples.size() + 1)
      error(where, std::to_string(offsets.size()) + " offsets, expected " +
                       std::to_string(dataset->examples.size() + 1) + " (examples + 1)");
    if (offsets.front() != 0 || offsets.back() != static_cast<int64_t>(tokens.size()) ||
        !std::is_sorted(offsets.begin(), offsets.end()))
      error(where, "offsets rising from 0 to " + std::to_string(tokens.size()) + " tokens");
    for (size_t i = 0; i < dataset->examples.size(); ++i) {
      std::vector<int32_t>& side =
          second ? dataset->examples[i].tokens2 : dataset->examples[i].tokens;
      side.assign(tokens.begin() + offsets[i], tokens.begin() + offsets[i + 1]);
    }
  }
};

}  // namespace

void write_token_cache(const std::string& cache_path, const Dataset& dataset,
                       const std::string& source_path) {
  const std::optional<SourceStamp> stamp = stamp_of(source_path);
  if (!stamp) fail("token_cache", "{}: the source '{}' does not exist", cache_path, source_path);
  const H5QuietErrors quiet;
  const size_t unique =
      std::hash<std::thread::id>{}(std::this_thread::get_id()) ^
      static_cast<size_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string temp = cache_path + ".tmp-" + std::to_string(unique);
  try {
    const H5Handle access = checksummed_file_access("token_cache");
    H5Handle file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);
    if (!file.valid()) write_failed(temp, "create");
    std::vector<int32_t> tokens;
    std::vector<int64_t> offsets, labels;
    flatten(dataset, false, &tokens, &offsets);
    write_array(file.get(), temp, "tokens", tokens);
    write_array(file.get(), temp, "offsets", offsets);
    for (const Example& example : dataset.examples) labels.push_back(example.label);
    write_array(file.get(), temp, "labels", labels);
    if (std::any_of(dataset.examples.begin(), dataset.examples.end(),
                    [](const Example& e) { return !e.tokens2.empty(); })) {
      tokens.clear();
      flatten(dataset, true, &tokens, &offsets);
      write_array(file.get(), temp, "tokens2", tokens);
      write_array(file.get(), temp, "offsets2", offsets);
    }
    write_attribute(file.get(), temp, "format_version", kFormatVersion);
    write_attribute(file.get(), temp, "vocab_size", dataset.vocab_size);
    write_attribute(file.get(), temp, "num_classes", dataset.num_classes);
    write_attribute(file.get(), temp, "source_size", stamp->size);
    write_attribute(file.get(), temp, "source_mtime_ns", stamp->mtime_ns);
    write_attribute(file.get(), temp, "name", dataset.name);
    if (!file.reset()) write_failed(temp, "close");
    fs::rename(temp, cache_path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw;
  }
}

std::optional<Dataset> load_cached(const std::string& cache_path, const std::string& source_path) {
  std::error_code error;
  if (!fs::is_regular_file(cache_path, error)) return std::nullopt;
  const std::optional<SourceStamp> stamp = stamp_of(source_path);
  if (!stamp) return std::nullopt;
  const H5QuietErrors quiet;
  if (const auto why = unchecksummed_format(cache_path)) Reader{cache_path, -1}.error("file", *why);
  H5Handle file(H5Fopen(cache_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  const Reader reader{cache_path, file.get()};
  if (!file.valid()) reader.error("file", "an HDF5 file that opens (not HDF5, or truncated)");
  const int64_t version = reader.integer("format_version");
  if (version != kFormatVersion)
    reader.error("attribute 'format_version'",
                 std::to_string(version) + ", expected " + std::to_string(kFormatVersion));
  if (reader.integer("source_size") != stamp->size ||
      reader.integer("source_mtime_ns") != stamp->mtime_ns)
    return std::nullopt;
  Dataset dataset;
  dataset.name = reader.text("name");
  dataset.vocab_size = reader.integer("vocab_size");
  dataset.num_classes = reader.integer("num_classes");
  const std::vector<int64_t> labels = reader.array<int64_t>("labels");
  dataset.examples.resize(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) dataset.examples[i].label = labels[i];
  reader.unflatten("tokens", "offsets", false, &dataset);
  if (H5Lexists(file.get(), "tokens2", H5P_DEFAULT) > 0)
    reader.unflatten("tokens2", "offsets2", true, &dataset);
  return dataset;
}

}  // namespace relpos
