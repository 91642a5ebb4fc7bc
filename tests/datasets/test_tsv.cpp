// The `tsv` dataset (datasets/tsv_dataset.cpp) on files written here: byte and word ids, the
// training vocabulary and unknown words, the cut to max_len, the classes of train, a byte-order
// mark, and an error naming the file and the line for every kind of malformed line.
#include <string>
#include <vector>

#include "datasets/dataset_registry.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;

namespace {

// train.tsv, valid.tsv and test.tsv in a scratch folder.
struct TsvFolder {
  test::ScratchDir dir;
  TsvFolder(const std::string& train, const std::string& valid, const std::string& test) {
    dir.write("train.tsv", train);
    dir.write("valid.tsv", valid);
    dir.write("test.tsv", test);
  }
  Dataset read(const std::string& split, const std::string& tokens = "bytes",
               int64_t max_len = 512) const {
    const auto source = make_dataset_source("tsv", Options("data").set("tokens", tokens));
    return source->read_split(DataFolder{"tsv", dir.path.string()}, split, max_len);
  }
};

std::vector<int32_t> ids(const std::string& bytes) {
  std::vector<int32_t> out;
  for (const char c : bytes) out.push_back(static_cast<int32_t>(static_cast<uint8_t>(c)) + 1);
  return out;
}

}  // namespace

TEST_CASE("tsv: bytes are ids + 1 (0 pads, vocab 257); classes are 1 + the largest train label") {
  const TsvFolder f("1\thi\n0\tyo\r\n2\ta\tb", "0\tok\n", "2\tz");
  const Dataset train = f.read("train");
  CHECK(train.name == "tsv/train");
  CHECK(train.vocab_size == 257);
  CHECK(train.num_classes == 3);
  REQUIRE(train.examples.size() == 3);
  CHECK(train.examples[0].label == 1);
  CHECK(train.examples[0].tokens == ids("hi"));
  CHECK(train.examples[1].tokens == ids("yo"));    // CRLF: the '\r' is no token
  CHECK(train.examples[2].tokens == ids("a\tb"));  // the text is all after the first tab
  const Dataset val = f.read("val");
  CHECK(val.name == "tsv/val");
  CHECK(val.num_classes == 3);
  CHECK(val.examples.at(0).tokens == ids("ok"));
  CHECK(f.read("test").examples.at(0).label == 2);
  CHECK(f.read("train", "bytes", 1).examples[0].tokens == ids("h"));  // cut to max_len
  const std::string high = "0\t" + std::string("\xff", 1) + "\n1\tb\n";
  const TsvFolder byte_ff(high, high, high);
  CHECK(byte_ff.read("train").examples[0].tokens == std::vector<int32_t>{256});
}

TEST_CASE("tsv: a UTF-8 byte-order mark at the start of a file is no part of the first label") {
  const std::string bom = "\xEF\xBB\xBF";
  const TsvFolder f(bom + "1\thi\n0\tyo\n", bom + "0\tok\n", "1\tz\n");
  const Dataset train = f.read("train");
  CHECK(train.num_classes == 2);
  CHECK(train.examples.at(0).label == 1);
  CHECK(train.examples.at(0).tokens == ids("hi"));
  CHECK(f.read("val").examples.at(0).label == 0);
  // Only at the start: elsewhere the bytes are text.
  const TsvFolder inside("1\t" + bom + "\n0\tyo\n", "0\tok\n", "1\tz\n");
  CHECK(inside.read("train").examples.at(0).tokens == ids(bom));
}

TEST_CASE("tsv: words get ids from the training split; other words are unknown (1)") {
  const TsvFolder f("0\tthe cat  sat\n1\t the dog\tsat \n", "1\tthe bird sat\n", "0\tcat\n");
  const Dataset train = f.read("train", "words");
  // 0 pad, 1 unknown, then the, cat, sat, dog in order of first appearance.
  CHECK(train.vocab_size == 6);
  CHECK(train.num_classes == 2);
  CHECK(train.examples[0].tokens == std::vector<int32_t>{2, 3, 4});
  CHECK(train.examples[1].tokens == std::vector<int32_t>{2, 5, 4});
  const Dataset val = f.read("val", "words");
  CHECK(val.vocab_size == 6);
  CHECK(val.examples[0].tokens == std::vector<int32_t>{2, 1, 4});  // bird: unknown
  CHECK(f.read("test", "words").examples[0].tokens == std::vector<int32_t>{3});
  CHECK(f.read("train", "words", 2).examples[0].tokens == std::vector<int32_t>{2, 3});
}

TEST_CASE("tsv: every malformed line is an error naming the file and the line") {
  const auto error = [](const std::string& train, const std::string& valid,
                        const std::string& split = "train", const std::string& tokens = "bytes") {
    const TsvFolder f(train, valid, "0\tx\n");
    const std::string path = (f.dir.path / (split == "train" ? "train.tsv" : "valid.tsv")).string();
    const std::string e = error_of([&] { f.read(split, tokens); });
    CHECK(e.find("[tsv] " + path + ": ") == 0);
    return e.substr(e.find(": ") + 2);
  };
  CHECK(error("0\tgood\nno tab here\n", "0\tx\n") == "line 2: no tab; expected label<TAB>text");
  CHECK(error("0\tgood\nx\ttext\n", "0\tx\n") ==
        "line 2: label 'x' is not an integer; expected 0, 1, 2, ...");
  CHECK(error("1.0\ttext\n", "0\tx\n") ==
        "line 1: label '1.0' is not an integer; expected 0, 1, 2, ...");
  CHECK(error("\ttext\n", "0\tx\n") == "line 1: label '' is not an integer; expected 0, 1, 2, ...");
  // A label's bytes are quoted printable: a NUL cut the message after it ("label '1").
  CHECK(error(std::string("0\ta\n1\0\x01\ttext\n", 13), "0\tx\n") ==
        "line 2: label '1\\x00\\x01' is not an integer; expected 0, 1, 2, ...");
  CHECK(error("0\ta\n" + std::string(100, '7') + "x\ttext\n", "0\tx\n") ==
        "line 2: label '" + std::string(40, '7') + "...' is not an integer; expected 0, 1, 2, ...");
  CHECK(error("0\ta\n-1\ttext\n", "0\tx\n") ==
        "line 2: label -1 is negative; expected 0, 1, 2, ...");
  CHECK(error("0\ta\n1\t\n", "0\tx\n") == "line 2: empty text; expected label<TAB>text");
  CHECK(error("0\ta\n\n1\tb\n", "0\tx\n") == "line 2: no tab; expected label<TAB>text");
  CHECK(error("", "0\tx\n") == "line 1: no examples; expected label<TAB>text");
  // A line of 64 MiB and more (a binary file with no newline) is refused as it grows.
  CHECK(error("0\ta\n1\t" + std::string(64 << 20, 'z') + "\n", "0\tx\n") ==
        "line 2: line longer than 67108864 bytes");
  CHECK(error("0\ta\n1\t   \n", "0\tx\n", "train", "words") ==
        "line 2: no words in the text; expected label<TAB>text");
  // train.tsv's labels make the classes: two or more, no more than its lines (the largest int64
  // label was an overflow to a negative class count).
  CHECK(error("0\ta\n0\tb\n", "0\tx\n") ==
        "labels: all 0; a classifier needs two classes or more (labels 0, 1, 2, ...)");
  CHECK(error("0\ta\n9223372036854775807\tb\n", "0\tx\n") ==
        "line 2: label 9223372036854775807 would make 9223372036854775808 classes for 2 lines; "
        "labels are 0, 1, 2, ... up to the number of classes less 1");
  CHECK(error("1\ta\n2\tb\n", "0\tx\n").find("line 2: label 2 would make 3 classes for 2") == 0);
  // A class of valid.tsv that train.tsv does not have: labels 0..C-1, C from train.
  const std::string e = error("0\ta\n1\tb\n", "1\tok\n2\tbad\n", "val");
  CHECK(e.find("line 2: label 2 is not a class of ") == 0);
  CHECK(e.find("train.tsv (0 to 1)") != std::string::npos);
}

TEST_CASE("tsv: a missing file says what to put where; tokens is bytes or words") {
  test::ScratchDir empty;
  const auto source = make_dataset_source("tsv", Options("data"));
  const std::string missing = error_of([&] {
    source->read_split(DataFolder{"tsv", empty.path.string()}, "train", 512);
  });
  const std::string start = "[data] train.tsv not found in '" + empty.path.string() + "': ";
  CHECK(missing.find(start + "tsv is your own labelled text: put train.tsv") == 0);
  CHECK(missing.find("in " + empty.path.string() + ", one example per line") != std::string::npos);
  CHECK(error_of([] { make_dataset_source("tsv", Options("data").set("tokens", "chars")); }) ==
        "[config] data.tokens must be bytes or words, got 'chars'");
  CHECK(source->default_length() == 512);
  CHECK(dataset_registry().at("tsv").kind == TaskKind::classification);
  CHECK(!dataset_registry().at("tsv").prepare);
}
