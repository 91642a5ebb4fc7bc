// IMDB reader: a tiny aclImdb tree written here gives exact byte ids, labels and order; missing
// folders, empty folders and empty reviews give errors naming the path.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/imdb.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  fs::path dir = fs::temp_directory_path() / ("relpos_test_" + name + "_" + std::to_string(stamp));
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("text: imdb reads byte ids + 1, neg then pos, files sorted by name") {
  const fs::path root = fresh_dir("imdb");
  const fs::path acl = root / "aclImdb";
  write_text(acl / "train" / "pos" / "1_9.txt", "Hi");
  write_text(acl / "train" / "pos" / "0_7.txt", std::string("A\xff", 2));
  write_text(acl / "train" / "pos" / "notes.md", "not a review");
  write_text(acl / "train" / "neg" / "0_2.txt", "no");

  const Dataset train = read_imdb(root.string(), "train");
  CHECK(train.name == "imdb/train");
  CHECK(train.vocab_size == 257);
  CHECK(train.num_classes == 2);
  REQUIRE(train.examples.size() == 3);
  CHECK(train.examples[0].tokens == std::vector<int32_t>{'n' + 1, 'o' + 1});
  CHECK(train.examples[0].label == 0);
  CHECK(train.examples[1].tokens == std::vector<int32_t>{'A' + 1, 256});
  CHECK(train.examples[1].label == 1);
  CHECK(train.examples[2].tokens == std::vector<int32_t>{'H' + 1, 'i' + 1});
  CHECK(train.examples[2].label == 1);
  CHECK(train.examples[0].tokens2.empty());

  // root may be aclImdb itself; max_len truncates.
  const Dataset cut = read_imdb(acl.string(), "train", 1);
  REQUIRE(cut.examples.size() == 3);
  CHECK(cut.examples[1].tokens == std::vector<int32_t>{'A' + 1});
  fs::remove_all(root);
}

TEST_CASE("text: imdb errors name the missing folder, the empty folder and the empty review") {
  const fs::path root = fresh_dir("imdb_bad");
  const fs::path acl = root / "aclImdb";
  write_text(acl / "test" / "neg" / "0_1.txt", "bad");

  CHECK(error_of([&] { read_imdb(root.string(), "test"); }) ==
        "[imdb] " + (acl / "test" / "pos").string() +
            ": open: missing folder; expected aclImdb/{train,test}/{pos,neg}/*.txt");

  fs::create_directories(acl / "test" / "pos");
  CHECK(error_of([&] { read_imdb(root.string(), "test"); }) ==
        "[imdb] " + (acl / "test" / "pos").string() + ": open: no *.txt review files");

  write_text(acl / "test" / "pos" / "3_8.txt", "");
  CHECK(error_of([&] { read_imdb(root.string(), "test"); }) ==
        "[imdb] " + (acl / "test" / "pos" / "3_8.txt").string() + ": byte 0: empty review");

  // A review that is a link to nothing is a broken download, not a smaller split.
  write_text(acl / "test" / "pos" / "3_8.txt", "fine");
  fs::create_symlink(root / "gone.txt", acl / "test" / "pos" / "4_9.txt");
  CHECK(error_of([&] { read_imdb(root.string(), "test"); })
            .find("[imdb] " + (acl / "test" / "pos" / "4_9.txt").string() + ": open: a link to '" +
                  (root / "gone.txt").string() + "', which leads to no file (") == 0);
  fs::remove(acl / "test" / "pos" / "4_9.txt");

  CHECK(error_of([&] { read_imdb(root.string(), "valid"); }) ==
        "[imdb] unknown split 'valid'; known: test, train");
  CHECK(error_of([&] { read_imdb(root.string(), "test", 0); }) ==
        "[imdb] max_len must be positive, got 0");
  fs::remove_all(root);
}
