// Character corpora and ordered LM batches: splits and the byte -> id map of a small byte file
// written here, their errors, and segments equal to a hand computation.
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <limits>
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

TEST_CASE("text: prepared splits train.txt, valid.txt, test.txt read with the train vocabulary") {
  const test::ScratchDir dir;
  dir.write("train.txt", "cabbage");
  dir.write("valid.txt", "bag");
  dir.write("test.txt", "ace");
  const CharCorpus corpus = read_char_splits(dir.path.string());
  CHECK(corpus.symbols == bytes_of("abceg"));
  CHECK(corpus.train == std::vector<uint8_t>{2, 0, 1, 1, 0, 4, 3});
  CHECK(corpus.valid == std::vector<uint8_t>{1, 0, 4});
  CHECK(corpus.test == std::vector<uint8_t>{0, 2, 3});
  // A byte training never saw is named with its file and offset there.
  const std::string test_path = dir.write("test.txt", "acez");
  CHECK(error_of([&] { read_char_splits(dir.path.string()); }) ==
        "[char_corpus] " + test_path + ": byte 3: byte 122 does not occur in the training split");
  const std::string valid_path = dir.write("valid.txt", "");
  CHECK(error_of([&] { read_char_splits(dir.path.string()); }) ==
        "[char_corpus] " + valid_path + ": byte 0: a non-empty split");
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

TEST_CASE("text: lm batches are contiguous rows sharing their boundary, tgt_len segments") {
  std::vector<uint8_t> ids(24);
  std::iota(ids.begin(), ids.end(), uint8_t{0});
  // 23 targets in 2 rows: n = 11, rows 0..11 and 11..22 (id 11 ends one and starts the other),
  // id 23 the tail. Segments at t = 0, 4, 8 with lengths 4, 4, 3.
  const LmBatches batches(ids, 2, 4);
  CHECK(batches.row_targets() == 11);
  REQUIRE(batches.num_segments() == 3);
  const LmSegment first = batches.segment(0);
  CHECK(first.inputs.dtype() == DType::i64);
  CHECK(first.inputs.shape() == Shape{2, 4});
  CHECK(first.inputs.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 11, 12, 13, 14});
  CHECK(first.targets.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 12, 13, 14, 15});
  const LmSegment second = batches.segment(1);
  CHECK(second.inputs.to_vector<int64_t>() == std::vector<int64_t>{4, 5, 6, 7, 15, 16, 17, 18});
  const LmSegment last = batches.segment(2);
  CHECK(last.inputs.shape() == Shape{2, 3});
  CHECK(last.inputs.to_vector<int64_t>() == std::vector<int64_t>{8, 9, 10, 19, 20, 21});
  CHECK(last.targets.to_vector<int64_t>() == std::vector<int64_t>{9, 10, 11, 20, 21, 22});
  REQUIRE(batches.num_tail_segments() == 1);
  const LmSegment tail = batches.tail_segment(0);
  CHECK(tail.inputs.to_vector<int64_t>() == std::vector<int64_t>{22});
  CHECK(tail.targets.to_vector<int64_t>() == std::vector<int64_t>{23});
  CHECK(LmBatches(std::vector<uint8_t>(23), 2, 4).num_tail_segments() == 0);
  CHECK(error_of([&] { batches.tail_segment(1); }) ==
        "[lm_batches] tail segment 1 out of range [0, 1)");

  CHECK(error_of([&] { batches.segment(3); }) == "[lm_batches] segment 3 out of range [0, 3)");
  CHECK(error_of([&] { LmBatches(ids, 0, 4); }) ==
        "[lm_batches] batch and tgt_len must be positive, got batch 0, tgt_len 4");
  CHECK(error_of([&] { LmBatches(std::vector<uint8_t>(2), 2, 4); }) ==
        "[lm_batches] 2 ids in 2 rows leave no target per row; need at least 3 ids");
  // The largest int64 of rows needs more ids than int64 counts: said as its largest value (it
  // wrapped to "need at least -9223372036854775808 ids", and a task's check let it through).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  CHECK(LmBatches::min_ids(kMax, LmLayout::shared_boundaries) == kMax);
  CHECK(LmBatches::min_ids(kMax / 2 + 1, LmLayout::reference) == kMax);
  CHECK(LmBatches::min_ids(kMax / 2, LmLayout::reference) == kMax - 1);
  CHECK(error_of([&] {
          LmBatches(ids, kMax, 4);
        }).find("rows leave no target per row; need at least 9223372036854775807 ids") !=
        std::string::npos);
}

TEST_CASE("text: every id of a split but the first is predicted exactly once, rows contiguous") {
  // Odd sizes: a stream of 1,000 distinct positions (ids = position mod 251), 7 rows, tgt_len 13.
  std::vector<uint8_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint8_t>(i % 251);
  for (int64_t rows : {1, 7, 64}) {
    INFO("rows " << rows);
    const LmBatches batches(ids, rows, 13);
    const int64_t n = batches.row_targets();
    std::vector<int> predicted(ids.size(), 0);
    // Position of each target: row b's segment t, column j is b n + t + j + 1.
    for (int64_t s = 0; s < batches.num_segments(); ++s) {
      const LmSegment seg = batches.segment(s);
      const auto targets = seg.targets.to_vector<int64_t>();
      const int64_t len = seg.targets.size(1);
      for (int64_t b = 0; b < rows; ++b)
        for (int64_t j = 0; j < len; ++j) {
          const int64_t position = b * n + s * 13 + j + 1;
          CHECK(targets[static_cast<size_t>(b * len + j)] == ids[static_cast<size_t>(position)]);
          ++predicted[static_cast<size_t>(position)];
          // The input is the id before: contiguous across segments of a row.
          CHECK(seg.inputs.to_vector<int64_t>()[static_cast<size_t>(b * len + j)] ==
                ids[static_cast<size_t>(position - 1)]);
        }
    }
    // The tail, (N - 1) mod rows ids, continues the last row in segments of at most tgt_len (at
    // 64 rows 39 ids: three segments; it was read as one, longer than any segment the model had).
    int64_t position = rows * n + 1;
    for (int64_t s = 0; s < batches.num_tail_segments(); ++s) {
      const LmSegment seg = batches.tail_segment(s);
      REQUIRE(seg.targets.size(0) == 1);
      CHECK(seg.targets.size(1) <= 13);
      CHECK(seg.targets.size(1) == std::min<int64_t>(13, 1000 - position));
      for (const int64_t target : seg.targets.to_vector<int64_t>()) {
        CHECK(target == ids[static_cast<size_t>(position)]);
        ++predicted[static_cast<size_t>(position++)];
      }
    }
    CHECK(batches.num_tail_segments() == (rows == 64 ? 3 : rows == 7 ? 1 : 0));
    CHECK(predicted[0] == 0);
    CHECK(std::count(predicted.begin() + 1, predicted.end(), 1) == 999);
    CHECK(batches.num_targets() == 999);
  }
}

// The reference's LMOrderedIterator, written out: data[:m * batch] viewed as [batch, m] (row b is
// ids[b m .. (b+1) m)), segments x[:, i:i+L] -> x[:, i+1:i+1+L] for i = 0, L, ... < m - 1.
TEST_CASE("text: the reference layout is LMOrderedIterator's rows, segments and scored targets") {
  for (const std::array<int64_t, 3>& size : std::vector<std::array<int64_t, 3>>{
           {3514, 10, 16}, {1000, 7, 13}, {20, 10, 3}, {61, 4, 100}}) {
    const int64_t n = size[0], rows = size[1], len = size[2];
    INFO("n " << n << " rows " << rows << " tgt_len " << len);
    std::vector<uint8_t> ids(static_cast<size_t>(n));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint8_t>((i * 7 + 3) % 251);
    const LmBatches batches(ids, rows, len, LmLayout::reference);
    const int64_t m = n / rows;
    CHECK(batches.row_targets() == m - 1);
    CHECK(batches.num_targets() == rows * (m - 1));
    CHECK(batches.num_tail_segments() == 0);
    int64_t segments = 0, scored = 0;
    for (int64_t i = 0; i < m - 1; i += len, ++segments) {
      const int64_t seq = std::min(len, m - 1 - i);
      std::vector<int64_t> inputs, targets;
      for (int64_t b = 0; b < rows; ++b)
        for (int64_t j = 0; j < seq; ++j) {
          inputs.push_back(ids[static_cast<size_t>(b * m + i + j)]);
          targets.push_back(ids[static_cast<size_t>(b * m + i + j + 1)]);
        }
      REQUIRE(segments < batches.num_segments());
      const LmSegment s = batches.segment(segments);
      CHECK(s.inputs.shape() == Shape{rows, seq});
      CHECK(s.inputs.to_vector<int64_t>() == inputs);
      CHECK(s.targets.to_vector<int64_t>() == targets);
      scored += rows * seq;
    }
    CHECK(segments == batches.num_segments());
    CHECK(scored == batches.num_targets());
  }
  // 3,514 characters in 10 rows: relpos scores all 3,513, the reference 3,500.
  const std::vector<uint8_t> text(3514);
  CHECK(LmBatches(text, 10, 16).num_targets() -
            LmBatches(text, 10, 16, LmLayout::reference).num_targets() ==
        13);
  CHECK(error_of([&] { LmBatches(std::vector<uint8_t>(19), 10, 4, LmLayout::reference); }) ==
        "[lm_batches] 19 ids in 10 rows leave no target per row; need at least 20 ids");
  CHECK(lm_layout_from_name("reference", "eval.layout") == LmLayout::reference);
  CHECK(error_of([&] {
          lm_layout_from_name("ref", "eval.layout");
        }).find("eval.layout must be relpos") != std::string::npos);
}
