// The HDF5 token cache: a round trip keeps every example (retrieval pairs and empty sequences
// included), a changed or missing source makes it stale, and corrupt or truncated cache files are
// errors naming the file.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "datasets/read_error.h"
#include "datasets/token_cache.h"
#include "tests/harness.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp dir, removed with its files at the end of the scope.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device entropy;
    path = fs::temp_directory_path() / ("relpos_token_cache_" + std::to_string(entropy()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

Dataset sample(bool retrieval) {
  Dataset dataset;
  dataset.name = "listops/train";
  dataset.vocab_size = 17;
  dataset.num_classes = 10;
  for (int i = 0; i < 9; ++i) {
    Example example;
    example.label = i % 10;
    for (int j = 0; j < i * 3; ++j) example.tokens.push_back((i + j) % 17);  // example 0: empty
    if (retrieval) example.tokens2.assign(static_cast<size_t>(i % 4 + 1), i);
    dataset.examples.push_back(example);
  }
  return dataset;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string error_of(const std::string& cache, const std::string& source) {
  try {
    load_cached(cache, source);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void check_same(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.num_classes == b.num_classes);
  REQUIRE(a.examples.size() == b.examples.size());
  for (size_t i = 0; i < a.examples.size(); ++i) {
    CHECK(a.examples[i].tokens == b.examples[i].tokens);
    CHECK(a.examples[i].tokens2 == b.examples[i].tokens2);
    CHECK(a.examples[i].label == b.examples[i].label);
  }
}

}  // namespace

TEST_CASE("token_cache: round trip keeps every example, with and without second documents") {
  const TempDir dir;
  const std::string source = dir.file("basic_train.tsv"), cache = dir.file("train.h5");
  write_text(source, "Source\tTarget\n");
  for (const bool retrieval : {false, true}) {
    const Dataset dataset = sample(retrieval);
    write_token_cache(cache, dataset, source);
    const std::optional<Dataset> loaded = load_cached(cache, source);
    REQUIRE(loaded.has_value());
    check_same(*loaded, dataset);
  }
  Dataset empty;
  empty.name = "";
  write_token_cache(cache, empty, source);
  REQUIRE(load_cached(cache, source).has_value());
  CHECK(load_cached(cache, source)->examples.empty());
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);
}

TEST_CASE("token_cache: a missing cache, or a source with a new mtime or size, is stale") {
  const TempDir dir;
  const std::string source = dir.file("source.txt"), cache = dir.file("cache.h5");
  write_text(source, "some text");
  CHECK(!load_cached(cache, source).has_value());  // no cache yet
  write_token_cache(cache, sample(false), source);
  CHECK(load_cached(cache, source).has_value());

  fs::last_write_time(source, fs::last_write_time(source) + std::chrono::seconds(1));  // touch
  CHECK(!load_cached(cache, source).has_value());
  write_token_cache(cache, sample(false), source);
  CHECK(load_cached(cache, source).has_value());

  const fs::file_time_type mtime = fs::last_write_time(source);
  write_text(source, "other text!");  // a new size under the same mtime
  fs::last_write_time(source, mtime);
  CHECK(!load_cached(cache, source).has_value());

  fs::remove(source);
  CHECK(!load_cached(cache, source).has_value());
  bool refused = false;
  try {
    write_token_cache(cache, sample(false), source);
  } catch (const Error& e) {
    refused = std::string(e.what()).find("source.txt' does not exist") != std::string::npos;
  }
  CHECK(refused);
}

TEST_CASE("token_cache: not HDF5, truncated or damaged caches are errors naming the file") {
  const TempDir dir;
  const std::string source = dir.file("source.txt"), cache = dir.file("cache.h5");
  write_text(source, "x");

  write_text(cache, "this is not an HDF5 file at all");
  CHECK(error_of(cache, source) ==
        "[token_cache] " + cache +
            ": file: not an HDF5 file (no HDF5 signature at byte 0) (delete the cache to rebuild "
            "it)");

  Dataset big = sample(false);
  big.examples[1].tokens.assign(200000, 7);
  write_token_cache(cache, big, source);
  std::vector<uint8_t> bytes = read_file_bytes("test", cache);
  const std::vector<uint8_t> whole = bytes;
  bytes.resize(bytes.size() / 2);
  write_file_atomic(cache, bytes);
  CHECK(error_of(cache, source).find("[token_cache] " + cache + ": file: ") == 0);

  bytes = whole;  // one flipped byte inside the tokens: the Fletcher-32 checksum catches it
  bytes[bytes.size() / 2] ^= 0x5a;
  write_file_atomic(cache, bytes);
  CHECK(error_of(cache, source) ==
        "[token_cache] " + cache +
            ": dataset 'tokens': readable data (checksum or read failure) (delete the cache to "
            "rebuild it)");
}
