// Whole-file reading: plain and gzip files, and the errors for a missing file and a truncated
// gzip stream, each naming the file and the position.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "datasets/read_error.h"
#include "tests/datasets/gzip_fixture.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("relpos_test_" + name)).string();
}

}  // namespace

TEST_CASE("data files: plain and gzip read the same bytes; bad files name path and position") {
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + i / 300);
  const std::string plain = temp_path("plain.bin"), gz = temp_path("packed.bin.gz");
  write_file_atomic(plain, data);
  write_file_atomic(gz, test::gzip_bytes(data));
  CHECK(read_file_bytes("test", plain) == data);
  CHECK(read_file_bytes("test", gz) == data);

  std::vector<uint8_t> cut = test::gzip_bytes(data);
  cut.resize(cut.size() / 2);
  const std::string truncated = temp_path("truncated.bin.gz");
  write_file_atomic(truncated, cut);
  const auto error_of = [](const std::string& path) {
    try {
      read_file_bytes("mnist", path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(truncated).find("[mnist] " + truncated + ": gzip byte") == 0);
  CHECK(error_of(temp_path("missing.idx")).find("missing.idx: open: cannot read the file") !=
        std::string::npos);
  for (const std::string& p : {plain, gz, truncated}) std::filesystem::remove(p);
}

TEST_CASE("data files: bytes after a gzip stream are refused; concatenated members read whole") {
  const std::vector<uint8_t> a(5000, 3), b(700, 9);
  std::vector<uint8_t> joined = test::gzip_bytes(a);
  const std::vector<uint8_t> second = test::gzip_bytes(b);
  joined.insert(joined.end(), second.begin(), second.end());
  const std::string two = temp_path("two_members.gz");
  write_file_atomic(two, joined);
  std::vector<uint8_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  CHECK(read_file_bytes("test", two) == both);

  std::vector<uint8_t> trailing = test::gzip_bytes(a);
  const size_t end = trailing.size();
  trailing.insert(trailing.end(), {'j', 'u', 'n', 'k'});
  const std::string junk = temp_path("trailing.gz");
  write_file_atomic(junk, trailing);
  CHECK(test::error_of([&] { read_file_bytes("mnist", junk); }) ==
        "[mnist] " + junk + ": gzip byte " + std::to_string(end) +
            ": 4 bytes after the end of the compressed stream (not another gzip member)");
  std::filesystem::remove(two);
  std::filesystem::remove(junk);
}

TEST_CASE("data files: a folder or a device is no data file; a link to a file is read through") {
  // A split linked to /dev/zero was read until the process was killed. /dev/null stands in for
  // it: the same check, and a finite read should the check ever fail.
  if (std::filesystem::is_character_file("/dev/null"))
    CHECK(test::error_of([] { read_file_bytes("char_corpus", "/dev/null"); }) ==
          "[char_corpus] /dev/null: open: is a character device, not a data file");
  const std::string folder = temp_path("folder_as_data");
  std::filesystem::create_directories(folder);
  CHECK(test::error_of([&] { check_data_file("aan", folder); }) ==
        "[aan] " + folder + ": open: is a directory, not a data file");
  const std::string file = temp_path("linked.bin"), link = temp_path("link.bin");
  write_file_atomic(file, std::vector<uint8_t>{1, 2, 3});
  std::filesystem::remove(link);
  std::filesystem::create_symlink(file, link);
  CHECK(read_file_bytes("test", link) == std::vector<uint8_t>{1, 2, 3});
  for (const std::string& p : {folder, file, link}) std::filesystem::remove(p);
}

// Read in 1 MiB blocks: a file of several blocks and a tail comes back whole, and so does a FIFO,
// whose size is not known before it is read.
TEST_CASE("data files: files of many blocks and FIFOs are read whole") {
  test::ScratchDir dir;
  std::string bytes(3 * (1 << 20) + 7, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string file = dir.file("big.tsv");
  std::ofstream(file, std::ios::binary) << bytes;
  const std::vector<uint8_t> back = read_file_bytes("tsv", file);
  CHECK(std::string(back.begin(), back.end()) == bytes);

  const std::string fifo = dir.file("stream.tsv");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << bytes; });
  const std::vector<uint8_t> streamed = read_file_bytes("tsv", fifo);
  writer.join();
  CHECK(std::string(streamed.begin(), streamed.end()) == bytes);
}
