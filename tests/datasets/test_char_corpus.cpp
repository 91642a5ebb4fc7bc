// Character corpora and ordered LM batches: splits and the byte -> id map of a small byte file
// written here, their errors, and segments equal to a hand computation.
#include <chrono>
#include <filesystem>
#include <numeric>
#include <string>

#include "datasets/char_corpus.h"
#include "datasets/lm_batches.h"
#include "datasets/read_error.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

}  // namespace

TEST_CASE("text: char corpus splits last test, valid before it, ids = rank among train bytes") {
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string path =
      (fs::temp_directory_path() / ("relpos_test_corpus_" + std::to_string(stamp))).string();
  write_file_atomic(path, bytes_of("cabbagebagace"));
  const CharCorpus corpus = read_byte_corpus(path, {.valid = 3, .test = 3});
  // train "cabbage" has a b c e g -> ids 0 1 2 3 4.
  CHECK(corpus.vocab_size == 5);
  CHECK(corpus.symbols == bytes_of("abceg"));
  CHECK(corpus.train == std::vector<uint8_t>{2, 0, 1, 1, 0, 4, 3});
  CHECK(corpus.valid == std::vector<uint8_t>{1, 0, 4});  // "bag"
  CHECK(corpus.test == std::vector<uint8_t>{0, 2, 3});   // "ace"

  // The defaults (5M + 5M) do not fit a 13-byte file.
  CHECK(error_of([&] { read_byte_corpus(path); }) ==
        "[char_corpus] " + path +
            ": byte 13: corpus of 13 bytes is not larger than valid + test (5000000 + 5000000 "
            "bytes); no training bytes left");
  fs::remove(path);
}

TEST_CASE("text: char corpus errors for unseen bytes, small corpora, negative splits") {
  CHECK(error_of([] {
          split_byte_corpus(bytes_of("cabbagebagacz"), {3, 3}, "c.txt");
        }) == "[char_corpus] c.txt: byte 12: byte 122 does not occur in the training split");
  CHECK(error_of([] {
          split_byte_corpus(bytes_of("abcdef"), {3, 3}, "c.txt");
        }) ==
        "[char_corpus] c.txt: byte 6: corpus of 6 bytes is not larger than valid + test (3 + 3 "
        "bytes); no training bytes left");
  CHECK(error_of([] {
          split_byte_corpus(bytes_of("abcdef"), {-1, 3}, "c.txt");
        }) == "[char_corpus] c.txt: split: split sizes must be non-negative, got valid -1, test 3");
  CHECK(error_of([] { read_byte_corpus("/nonexistent/enwik8"); }) ==
        "[char_corpus] /nonexistent/enwik8: open: cannot read the file (missing or no "
        "permission)");
}

TEST_CASE("text: lm batches are [batch, n_step] rows read in tgt_len segments, shifted targets") {
  std::vector<uint8_t> ids(23);
  std::iota(ids.begin(), ids.end(), uint8_t{0});
  // n_step = 23 / 2 = 11: rows 0..10 and 11..21, id 22 dropped. Segments at t = 0, 4, 8 with
  // lengths 4, 4, min(4, 11 - 1 - 8) = 2.
  const LmBatches batches(ids, 2, 4);
  CHECK(batches.n_step() == 11);
  REQUIRE(batches.num_segments() == 3);
  const LmSegment first = batches.segment(0);
  CHECK(first.inputs.dtype() == DType::i64);
  CHECK(first.inputs.shape() == Shape{2, 4});
  CHECK(first.inputs.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 11, 12, 13, 14});
  CHECK(first.targets.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 12, 13, 14, 15});
  const LmSegment second = batches.segment(1);
  CHECK(second.inputs.to_vector<int64_t>() == std::vector<int64_t>{4, 5, 6, 7, 15, 16, 17, 18});
  CHECK(second.targets.to_vector<int64_t>() == std::vector<int64_t>{5, 6, 7, 8, 16, 17, 18, 19});
  const LmSegment last = batches.segment(2);
  CHECK(last.inputs.shape() == Shape{2, 2});
  CHECK(last.inputs.to_vector<int64_t>() == std::vector<int64_t>{8, 9, 19, 20});
  CHECK(last.targets.to_vector<int64_t>() == std::vector<int64_t>{9, 10, 20, 21});
  CHECK(batches.segment(2).inputs.to_vector<int64_t>() == last.inputs.to_vector<int64_t>());

  CHECK(error_of([&] { batches.segment(3); }) == "[lm_batches] segment 3 out of range [0, 3)");
  CHECK(error_of([&] { LmBatches(ids, 0, 4); }) ==
        "[lm_batches] batch and tgt_len must be positive, got batch 0, tgt_len 4");
  CHECK(error_of([&] { LmBatches(std::vector<uint8_t>(3), 2, 4); }) ==
        "[lm_batches] 3 ids in 2 rows leave 1 per row; need at least 2 (an input and its "
        "target)");
}
