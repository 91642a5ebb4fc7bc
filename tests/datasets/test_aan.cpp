// AAN reader: a TSV written here gives exact labels and byte ids for both texts (float labels,
// CRLF, no final newline, the 10,000-byte cap); each malformed line gives its error and line.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/aan.h"
#include "tests/harness.h"

using namespace relpos;
namespace fs = std::filesystem;

namespace {

std::string write_tsv(const std::string& name, const std::string& text) {
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const fs::path path =
      fs::temp_directory_path() / ("relpos_test_" + name + "_" + std::to_string(stamp) + ".tsv");
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// The error read_aan(text) gives, with the "[aan] path: " prefix checked and removed.
std::string error_of(const std::string& text) {
  const std::string path = write_tsv("aan_bad", text);
  std::string message;
  try {
    read_aan(path);
  } catch (const Error& e) {
    message = e.what();
  }
  fs::remove(path);
  const std::string prefix = "[aan] " + path + ": ";
  REQUIRE(message.rfind(prefix, 0) == 0);
  return message.substr(prefix.size());
}

std::vector<int32_t> ids_of(const std::string& text) {
  std::vector<int32_t> ids;
  for (const char c : text) ids.push_back(static_cast<int32_t>(static_cast<uint8_t>(c)) + 1);
  return ids;
}

}  // namespace

TEST_CASE("text: aan reads labels and byte ids of both texts, capped and truncated") {
  const std::string long_text(12000, 'x');
  const std::string path = write_tsv("aan",
                                     "1.0\tid1\tid2\tAB\tc\n"
                                     "0\tx\ty\t\t\xff\r\n"
                                     "0.0\tp\tq\t" +
                                         long_text + "\tshort\n" + "1\ta\tb\tabcdef\tg");
  const Dataset data = read_aan(path, 20000);
  CHECK(data.vocab_size == 257);
  CHECK(data.num_classes == 2);
  REQUIRE(data.examples.size() == 4);
  CHECK(data.examples[0].label == 1);
  CHECK(data.examples[0].tokens == ids_of("AB"));
  CHECK(data.examples[0].tokens2 == ids_of("c"));
  CHECK(data.examples[1].label == 0);
  CHECK(data.examples[1].tokens.empty());
  CHECK(data.examples[1].tokens2 == std::vector<int32_t>{256});
  CHECK(data.examples[2].label == 0);
  CHECK(data.examples[2].tokens == ids_of(std::string(10000, 'x')));  // first 10,000 bytes
  CHECK(data.examples[3].label == 1);
  CHECK(data.examples[3].tokens == ids_of("abcdef"));

  const Dataset cut = read_aan(path, 4);
  CHECK(cut.examples[2].tokens == ids_of("xxxx"));
  CHECK(cut.examples[2].tokens2 == ids_of("shor"));
  CHECK(cut.examples[3].tokens == ids_of("abcd"));
  fs::remove(path);
}

TEST_CASE("text: aan errors give the line and what was expected") {
  const std::string good = "1\ta\tb\tx\ty\n";
  CHECK(error_of(good + "0.5\ta\tb\tx\ty\n") == "line 2: label '0.5' must be 0 or 1");
  CHECK(error_of(good + "2\ta\tb\tx\ty\n") == "line 2: label '2' must be 0 or 1");
  CHECK(error_of(good + good + "pos\ta\tb\tx\ty\n") ==
        "line 3: label 'pos' is not a number (expected 0 or 1)");
  CHECK(error_of("\ta\tb\tx\ty\n") == "line 1: label '' is not a number (expected 0 or 1)");
  // Wrong column count, and a file truncated inside its last line.
  CHECK(error_of(good + "1\ta\tb\tx\ty\tz\n") ==
        "line 2: expected 5 tab-separated columns (label, id1, id2, text1, text2), found 6");
  CHECK(error_of(good + "1\ta\tb\tx") ==
        "line 2: expected 5 tab-separated columns (label, id1, id2, text1, text2), found 4");
  CHECK(error_of(good + "\n" + good) ==
        "line 2: expected 5 tab-separated columns (label, id1, id2, text1, text2), found 1");
  CHECK(error_of(good + "1\ta\tb\t" + std::string(kAanMaxLineBytes, 'x') + "\ty\n") ==
        "line 2: line longer than 1048576 bytes");
  CHECK(error_of("") == "line 1: no examples (empty file)");

  const std::string missing = (fs::temp_directory_path() / "relpos_test_no_such.tsv").string();
  std::string message;
  try {
    read_aan(missing);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message == "[aan] " + missing + ": open: cannot read the file (missing or no permission)");
}
