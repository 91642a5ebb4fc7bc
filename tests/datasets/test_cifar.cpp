// CIFAR-10 binary batches: TF-exact grayscale, labels and 1024 gray tokens per record, the
// 90% / 10% train/val split, and the errors for incomplete records, bad labels, missing files.
#include <filesystem>
#include <random>
#include <string>

#include "datasets/cifar.h"
#include "datasets/read_error.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;

namespace {

struct FixtureDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("relpos_test_cifar_" + std::to_string(std::random_device{}()));
  FixtureDir() { std::filesystem::create_directories(path); }
  ~FixtureDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// One record: the label, then every pixel of the R, G and B planes set to r, g, b.
std::vector<uint8_t> record(uint8_t label, uint8_t r, uint8_t g, uint8_t b) {
  std::vector<uint8_t> out = {label};
  for (const uint8_t v : {r, g, b}) out.insert(out.end(), 1024, v);
  return out;
}

std::vector<uint8_t> concat(const std::vector<std::vector<uint8_t>>& parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("cifar: rgb_to_gray equals TF's rgb_to_grayscale (float32, x 255.5, truncated)") {
  // Expected values from the same float32 steps as TF, worked out in Python with struct-packed
  // floats; (0, 255, 0) gives 149.97 -> 149, which rounding would make 150.
  CHECK(rgb_to_gray(0, 0, 0) == 0);
  CHECK(rgb_to_gray(255, 255, 255) == 255);
  CHECK(rgb_to_gray(255, 0, 0) == 76);
  CHECK(rgb_to_gray(0, 255, 0) == 149);
  CHECK(rgb_to_gray(0, 0, 255) == 29);
  CHECK(rgb_to_gray(100, 150, 200) == 141);
  CHECK(rgb_to_gray(1, 1, 1) == 1);
  CHECK(rgb_to_gray(37, 201, 90) == 139);
}

TEST_CASE("cifar: batches give labels and gray tokens; train/val are the first 90% / last 10%") {
  const FixtureDir dir;
  // 5 training batches of 2 records: record k (0..9) has label k and gray pixels from (k, k, k).
  for (int b = 0; b < 5; ++b) {
    const auto k0 = static_cast<uint8_t>(2 * b), k1 = static_cast<uint8_t>(2 * b + 1);
    write_file_atomic(dir.file("data_batch_" + std::to_string(b + 1) + ".bin"),
                      concat({record(k0, k0, k0, k0), record(k1, k1, k1, k1)}));
  }
  // A test record with distinct planes: R is a ramp over the 1024 pixels, G = 255, B = 0.
  std::vector<uint8_t> test = record(3, 0, 255, 0);
  for (int p = 0; p < 1024; ++p) test[1 + static_cast<size_t>(p)] = static_cast<uint8_t>(p % 256);
  write_file_atomic(dir.file("test_batch.bin"), concat({test, record(7, 0, 0, 0)}));

  const Dataset train = read_cifar10(dir.path.string(), "train");
  const Dataset val = read_cifar10(dir.path.string(), "val");
  const Dataset tst = read_cifar10(dir.path.string(), "test");
  CHECK(train.name == "cifar10/train");
  CHECK(train.vocab_size == 256);
  CHECK(train.num_classes == 10);
  REQUIRE(train.examples.size() == 9);
  REQUIRE(val.examples.size() == 1);
  REQUIRE(tst.examples.size() == 2);
  for (int k = 0; k < 9; ++k) {
    CHECK(train.examples[static_cast<size_t>(k)].label == k);
    CHECK(train.examples[static_cast<size_t>(k)].tokens ==
          std::vector<int32_t>(1024, rgb_to_gray(static_cast<uint8_t>(k), static_cast<uint8_t>(k),
                                                 static_cast<uint8_t>(k))));
  }
  CHECK(val.examples[0].label == 9);
  CHECK(tst.examples[0].label == 3);
  REQUIRE(tst.examples[0].tokens.size() == 1024);
  for (int p : {0, 1, 300, 1023}) {
    CHECK(tst.examples[0].tokens[static_cast<size_t>(p)] ==
          rgb_to_gray(static_cast<uint8_t>(p % 256), 255, 0));
  }
  // A black image is 1024 real 0 tokens (nothing is dropped as padding).
  CHECK(tst.examples[1].tokens == std::vector<int32_t>(1024, 0));
  CHECK(tst.examples[1].label == 7);
}

TEST_CASE("cifar: incomplete records, labels above 9, missing files and bad splits are refused") {
  const FixtureDir dir;
  const std::string batch = dir.file("data_batch_1.bin");
  std::vector<Example> out;
  std::vector<uint8_t> cut = concat({record(1, 0, 0, 0), record(2, 0, 0, 0)});
  cut.resize(3073 + 100);
  write_file_atomic(batch, cut);
  CHECK(error_of([&] { read_cifar10_batch(batch, out); }) ==
        "[cifar10] " + batch +
            ": byte 3073: incomplete record of 100 bytes; each record is 3073 bytes (1 label + "
            "3072 pixel bytes), so the file size must be a multiple of 3073");

  write_file_atomic(batch, {});  // an empty batch file is a broken download, not zero records
  CHECK(error_of([&] { read_cifar10_batch(batch, out); }) ==
        "[cifar10] " + batch +
            ": byte 0: no records; a batch holds records of 3073 bytes (1 label + 3072 pixel "
            "bytes)");

  write_file_atomic(batch, concat({record(1, 0, 0, 0), record(10, 0, 0, 0)}));
  CHECK(error_of([&] { read_cifar10_batch(batch, out); }) ==
        "[cifar10] " + batch + ": byte 3073: label 10 of record 1; expected 0 to 9");

  write_file_atomic(batch, record(1, 0, 0, 0));
  write_file_atomic(dir.file("data_batch_2.bin"), record(1, 0, 0, 0));
  CHECK(error_of([&] {
          read_cifar10(dir.path.string(), "train");
        }).find("[cifar10] " + dir.file("data_batch_3.bin") + ": open: missing; expected") == 0);
  CHECK(error_of([&] {
          read_cifar10(dir.path.string(), "test");
        }).find(dir.file("test_batch.bin") + ": open: missing") != std::string::npos);
  CHECK(error_of([&] { read_cifar10(dir.path.string(), "dev"); }) ==
        "[cifar10] unknown split 'dev'; known: test, train, val");
}
