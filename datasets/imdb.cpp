// IMDB reader (datasets/imdb.h): one review per file, every byte kept (no decoding, no
// lower-casing), as the LRA Text task does.
#include "datasets/imdb.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "datasets/read_error.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

const char* const kReader = "imdb";

// The review files of one class folder, sorted by name.
std::vector<fs::path> review_files(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    read_error(kReader, folder.string(), "open",
               "missing folder; expected aclImdb/{train,test}/{pos,neg}/*.txt");
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".txt") continue;
    // A *.txt entry that is no readable file (a dangling link, a folder) is a broken download:
    // refuse it rather than train on a silently smaller split.
    std::error_code kind;
    if (!it->is_regular_file(kind)) {  // the type read with the entry: no stat for a plain file
      refuse_broken_link(kReader, it->path().string());
      read_error(kReader, it->path().string(), "open", "not a regular file");
    }
    files.push_back(it->path());
  }
  if (ec) read_error(kReader, folder.string(), "list", "cannot list the folder: " + ec.message());
  if (files.empty()) read_error(kReader, folder.string(), "open", "no *.txt review files");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Dataset read_imdb(const std::string& root, const std::string& split, int64_t max_len) {
  RELPOS_CHECK(split == "train" || split == "test", kReader,
               "unknown split '{}'; known: test, train", split);
  RELPOS_CHECK(max_len > 0, kReader, "max_len must be positive, got {}", max_len);
  std::error_code ec;
  const fs::path nested = fs::path(root) / "aclImdb";
  const fs::path base = fs::is_directory(nested, ec) ? nested : fs::path(root);
  Dataset data;
  data.name = "imdb/" + split;
  data.vocab_size = 257;
  data.num_classes = 2;
  for (const auto& [folder, label] : {std::pair{"neg", 0}, std::pair{"pos", 1}}) {
    for (const fs::path& file : review_files(base / split / folder)) {
      const std::vector<uint8_t> bytes = read_file_bytes(kReader, file.string());
      if (bytes.empty()) read_error(kReader, file.string(), at_byte(0), "empty review");
      Example example;
      example.label = label;
      const size_t n = std::min(bytes.size(), static_cast<size_t>(max_len));
      example.tokens.reserve(n);
      for (size_t i = 0; i < n; ++i) example.tokens.push_back(static_cast<int32_t>(bytes[i]) + 1);
      data.examples.push_back(std::move(example));
    }
  }
  return data;
}

}  // namespace relpos
