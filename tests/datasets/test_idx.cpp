// IDX files and the MNIST reader: raw and gzip files written by the test read back exactly; every
// malformed header, payload, count or label is refused with the file, byte offset and expectation.
#include <fmt/format.h>

#include <filesystem>
#include <random>
#include <string>

#include "datasets/idx.h"
#include "datasets/read_error.h"
#include "tests/datasets/gzip_fixture.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;

namespace {

// A fresh folder for one test's fixtures, removed on scope exit.
struct FixtureDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("relpos_test_idx_" + std::to_string(std::random_device{}()));
  FixtureDir() { std::filesystem::create_directories(path); }
  ~FixtureDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Raw IDX bytes: the 4 magic bytes as given, big-endian dims, then the payload.
std::vector<uint8_t> idx_bytes(std::vector<uint8_t> magic, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& payload) {
  for (const uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) magic.push_back(static_cast<uint8_t>(d >> shift));
  magic.insert(magic.end(), payload.begin(), payload.end());
  return magic;
}

}  // namespace

TEST_CASE("idx: raw and gzip files read back the dims and bytes written") {
  const FixtureDir dir;
  std::vector<uint8_t> payload(2 * 3 * 4 * 5);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 37);
  write_idx(dir.file("four-dims"), {2, 3, 4, 5}, payload);
  const IdxArray raw = read_idx("mnist", dir.file("four-dims"));
  CHECK(raw.dims == std::vector<int64_t>{2, 3, 4, 5});
  CHECK(raw.data == payload);

  write_file_atomic(dir.file("four-dims.gz"),
                    test::gzip_bytes(read_file_bytes("t", dir.file("four-dims"))));
  const IdxArray packed = read_idx("mnist", dir.file("four-dims.gz"));
  CHECK(packed.dims == raw.dims);
  CHECK(packed.data == payload);

  write_idx(dir.file("one-dim"), {3}, {7, 0, 255});
  CHECK(read_file_bytes("t", dir.file("one-dim")) ==
        std::vector<uint8_t>{0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 255});
  CHECK(error_of([&] {
          write_idx(dir.file("bad"), {2, 2}, {1, 2, 3});
        }).find("3 bytes given for dims [2, 2] (need 4)") != std::string::npos);
}

TEST_CASE("idx: malformed files name the byte offset and what was expected") {
  const FixtureDir dir;
  const auto error_for = [&](const std::vector<uint8_t>& bytes) {
    write_file_atomic(dir.file("case"), bytes);
    return error_of([&] { read_idx("mnist", dir.file("case")); });
  };
  const std::string at = "[mnist] " + dir.file("case") + ": ";
  const std::vector<uint8_t> six(6, 1);
  CHECK(error_for(idx_bytes({1, 0, 8, 3}, {1, 2, 3}, six)) ==
        at + "byte 0: magic number 0x01000803; expected 0x0000 08 NN (an IDX file)");
  CHECK(error_for(idx_bytes({0, 0, 0x0d, 3}, {1, 2, 3}, six)) ==
        at + "byte 2: data type 0x0d; expected 0x08 (unsigned byte)");
  CHECK(error_for(idx_bytes({0, 0, 8, 0}, {}, six)) ==
        at + "byte 3: 0 dimensions; expected 1 to 4");
  CHECK(error_for(idx_bytes({0, 0, 8, 5}, {1, 1, 1, 1, 6}, six)) ==
        at + "byte 3: 5 dimensions; expected 1 to 4");
  CHECK(error_for(idx_bytes({0, 0, 8, 3}, {1, 0, 3}, six)) == at + "byte 8: dimension 1 is 0");
  CHECK(error_for({0, 0, 8}) ==
        at + "byte 3: file ends after 3 bytes; expected a 4-byte IDX " + "magic number");
  CHECK(error_for({0, 0, 8, 3, 0, 0, 0, 1, 0, 0}) ==
        at + "byte 10: file ends inside the header; 3 dimensions need 16 header bytes");
  // Truncated payload: 5 of the 6 bytes.
  CHECK(error_for(idx_bytes({0, 0, 8, 3}, {1, 2, 3}, {1, 2, 3, 4, 5})) ==
        at + "byte 21: file ends after 5 payload bytes; dims [1, 2, 3] need 6");
  // Three bytes too many: the first extra one is at 16 + 6.
  CHECK(error_for(idx_bytes({0, 0, 8, 3}, {1, 2, 3}, std::vector<uint8_t>(9, 0))) ==
        at + "byte 22: 3 bytes after the end of the payload of dims [1, 2, 3]");
  // Dims whose product overflows 64 bits are refused as too short, not wrapped around.
  CHECK(error_for(idx_bytes({0, 0, 8, 4}, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, six))
            .find("file ends after 6 payload bytes; dims [4294967295, 4294967295, 4294967295, "
                  "4294967295] need over 2^64") != std::string::npos);
}

TEST_CASE("idx: read_mnist gives pixel tokens in raster order, 0 a real token, labels 0..9") {
  const FixtureDir dir;
  // images: [3, 2, 3]; image i holds pixels 10 i + (0..5), image 0 starts with a black pixel.
  std::vector<uint8_t> pixels;
  for (uint8_t i = 0; i < 3; ++i)
    for (uint8_t p = 0; p < 6; ++p) pixels.push_back(static_cast<uint8_t>(10 * i + p));
  write_idx(dir.file("images"), {3, 2, 3}, pixels);
  write_file_atomic(dir.file("labels.gz"),
                    test::gzip_bytes(idx_bytes({0, 0, 8, 1}, {3}, {9, 0, 4})));
  const Dataset d = read_mnist(dir.file("images"), dir.file("labels.gz"), "mnist/train");
  CHECK(d.name == "mnist/train");
  CHECK(d.vocab_size == 256);
  CHECK(d.num_classes == 10);
  REQUIRE(d.examples.size() == 3);
  CHECK(d.examples[0].tokens == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(d.examples[2].tokens == std::vector<int32_t>{20, 21, 22, 23, 24, 25});
  CHECK(d.examples[0].label == 9);
  CHECK(d.examples[1].label == 0);
  CHECK(d.examples[2].label == 4);
  CHECK(d.examples[1].tokens2.empty());
}

TEST_CASE("idx: read_mnist refuses images of another geometry than the caller's, naming dims") {
  // The MNIST path pools and places 28 x 28 images (pooling once read outside 14 x 14 ones).
  const FixtureDir dir;
  write_idx(dir.file("labels"), {2}, {1, 2});
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{14, 14}, {28, 27}, {56, 56}}) {
    RELPOS_INFO("{} x {}", rows, cols);
    write_idx(dir.file("images"), {2, rows, cols},
              std::vector<uint8_t>(static_cast<size_t>(2 * rows * cols), 7));
    CHECK(error_of([&] {
            read_mnist(dir.file("images"), dir.file("labels"), "mnist/train", 28, 28);
          }) == fmt::format("[mnist] {}: header: images are {} x {}; expected 28 x 28",
                            dir.file("images"), rows, cols));
    CHECK(read_mnist(dir.file("images"), dir.file("labels"), "mnist/train").examples.size() == 2);
  }
}

TEST_CASE("idx: read_mnist refuses count mismatch, labels above 9 and wrong dims") {
  const FixtureDir dir;
  write_idx(dir.file("images"), {3, 2, 2}, std::vector<uint8_t>(12, 1));
  write_idx(dir.file("two-labels"), {2}, {1, 2});
  write_idx(dir.file("bad-label"), {3}, {1, 10, 2});
  write_idx(dir.file("flat"), {3, 4}, std::vector<uint8_t>(12, 1));
  const auto error_for = [&](const std::string& images, const std::string& labels) {
    return error_of([&] { read_mnist(dir.file(images), dir.file(labels), "fashion-mnist/test"); });
  };
  CHECK(error_for("images", "two-labels") == "[fashion-mnist] " + dir.file("two-labels") +
                                                 ": byte 4: 2 labels, but " + dir.file("images") +
                                                 " holds 3 images");
  CHECK(error_for("images", "bad-label") == "[fashion-mnist] " + dir.file("bad-label") +
                                                ": byte 9: label 10 of image 1; expected 0 to 9");
  CHECK(error_for("flat", "bad-label") ==
        "[fashion-mnist] " + dir.file("flat") +
            ": byte 3: 2 dimensions; expected 3 (images, rows, cols)");
  CHECK(error_for("images", "flat") ==
        "[fashion-mnist] " + dir.file("flat") + ": byte 3: 2 dimensions; expected 1 (labels)");
  CHECK(error_for("images", "missing").find("missing: open: cannot read the file") !=
        std::string::npos);
}
