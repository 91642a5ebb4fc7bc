// The dataset registry: every entry describes itself and says how to get its files, unknown names
// list the registered ones, missing files say how to get them, and MNIST pooling (now the MNIST
// family's own transform) averages blocks.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "datasets/dataset_registry.h"
#include "datasets/mnist_family.h"
#include "datasets/prepare.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;

TEST_CASE("dataset registry: every dataset has a description, a task kind and a way to get it") {
  const std::vector<std::string> names = dataset_registry().names();
  REQUIRE(names.size() >= 10);
  int classification = 0, language_modelling = 0;
  for (const std::string& name : names) {
    CAPTURE(name);
    const DatasetEntry& entry = dataset_registry().at(name);
    CHECK(!entry.description.empty());
    CHECK(entry.description.find('\n') == std::string::npos);  // one line
    CHECK((entry.prepare || !entry.how_to_get.empty()));
    CHECK(!entry.how_to_get.empty());
    (entry.kind == TaskKind::classification ? classification : language_modelling) += 1;
    // Every dataset builds from no keys of its own (all of them have defaults).
    const auto source = entry.make(Options("data"));
    REQUIRE(source != nullptr);
    if (entry.kind == TaskKind::classification) CHECK(source->default_length() > 0);
  }
  CHECK(classification > 0);
  CHECK(language_modelling > 0);
}

TEST_CASE("dataset registry: an unknown name lists every registered one") {
  const std::string error = error_of([] { dataset_registry().at("mnsit"); });
  CHECK(error.find("[data] unknown dataset 'mnsit'; known: ") == 0);
  for (const std::string& name : dataset_registry().names()) {
    CAPTURE(name);
    CHECK(error.find(name) != std::string::npos);
  }
  CHECK(error_of([] {
          make_dataset_source("cifar100", Options("data"));
        }).find("unknown dataset 'cifar100'") != std::string::npos);
  CHECK(error_of([] {
          dataset_registry().at("x", "data prepare");
        }).find("[data prepare] unknown dataset 'x'") == 0);
}

TEST_CASE("dataset registry: a missing file says how to get the dataset, on one line") {
  const DataFolder folder{"cifar10", "/nowhere/cifar"};
  const std::string error = error_of([&] { folder.file("test_batch.bin"); });
  CHECK(error.find("[data] test_batch.bin not found in '/nowhere/cifar': cifar10: download ") == 0);
  CHECK(error.find("/nowhere/cifar/cifar-10-batches-bin/") != std::string::npos);  // DIR replaced
  CHECK(error.find("--set data.dir=") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("dataset registry: a link that leads to no file is named, not called missing") {
  // A dangling link and a loop were "not found in DIR" with how to download the dataset, though
  // `ls` shows the file there.
  test::ScratchDir dir;
  std::filesystem::create_symlink(dir.path / "gone.tsv", dir.path / "basic_train.tsv");
  std::filesystem::create_symlink("basic_val.tsv", dir.path / "basic_val.tsv");
  const DataFolder folder{"listops", dir.path.string()};
  const std::string dangling = (dir.path / "basic_train.tsv").string();
  const std::string error = error_of([&] { folder.file("basic_train.tsv"); });
  CHECK(error.find("[data] " + dangling + ": open: a link to '" + (dir.path / "gone.tsv").string() +
                   "', which leads to no file (") == 0);
  CHECK(error.ends_with("); mend or remove the link"));
  const std::string loop = (dir.path / "basic_val.tsv").string();
  const std::string looped = error_of([&] { folder.file("basic_val.tsv"); });
  CHECK(looped.find("[data] " + loop + ": open: a link to 'basic_val.tsv', which leads to no") ==
        0);
  // The readers that look for their files themselves: MNIST's raw-or-gz lookup, a char corpus,
  // CIFAR-10's training batches.
  std::filesystem::create_symlink("nowhere", dir.path / "train-images-idx3-ubyte.gz");
  std::filesystem::create_symlink("nowhere", dir.path / "train.txt");
  dir.write("test_batch.bin", "");
  std::filesystem::create_symlink("nowhere", dir.path / "data_batch_1.bin");
  const auto broken = [&](const std::string& dataset, const std::string& reader,
                          const std::string& name, auto read) {
    const auto source = make_dataset_source(dataset, Options("data"));
    const DataFolder here{dataset, dir.path.string()};
    const std::string message = error_of([&] { read(*source, here); });
    CHECK(message.find("[" + reader + "] " + (dir.path / name).string() +
                       ": open: a link to 'nowhere', which") == 0);
  };
  const auto train_split = [](const DatasetSource& s, const DataFolder& f) {
    s.read_split(f, "train", 0);
  };
  broken("mnist", "data", "train-images-idx3-ubyte.gz", train_split);
  broken("cifar10", "cifar10", "data_batch_1.bin", train_split);
  broken("chars", "data", "train.txt",
         [](const DatasetSource& s, const DataFolder& f) { s.read_corpus(f); });
}

TEST_CASE("dataset registry: a dataset's own keys are checked where they are read") {
  CHECK(error_of([] { make_dataset_source("mnist", Options("data").set("image_pool", 3)); }) ==
        "[config] data.image_pool must divide 28 (1, 2, 4, 7, 14), got 3");
  CHECK(error_of([] { make_dataset_source("imdb", Options("data").set("val_fraction", 1)); }) ==
        "[config] data.val_fraction must be in [0, 1), got 1");
  CHECK(error_of([] {
          make_dataset_source("listops", Options("data").set("tokenizer", "x"));
        }).find("unknown tokenizer 'x'") != std::string::npos);
  CHECK(make_dataset_source("mnist", Options("data").set("image_pool", 4))->default_length() == 49);
}

TEST_CASE("mnist family: pooling averages each block, rounded") {
  Dataset d;
  Example e;
  e.tokens.resize(28 * 28);
  for (int r = 0; r < 28; ++r)
    for (int c = 0; c < 28; ++c) e.tokens[r * 28 + c] = (r < 14 ? 0 : 254) + (c % 2);
  d.examples.push_back(e);
  // [784] -> [4]: the top blocks alternate 0 and 1 (mean 0.5 -> 1), the bottom 254 and 255.
  pool_images(d, 14);
  CHECK(d.examples[0].tokens == std::vector<int32_t>{1, 1, 255, 255});
  pool_images(d, 1);  // factor 1 leaves it alone
  CHECK(d.examples[0].tokens.size() == 4);
}

TEST_CASE("dataset registry: every preparer refuses a folder it cannot make before any work") {
  // Before it downloads, reads or generates anything: with no npm on PATH and no --from file,
  // the folder is the first thing refused (a download or 96,000 ListOps trees came first).
  const test::ScratchDir dir;
  const std::string file = dir.write("plain", "x"), out = file + "/data";
  const std::string saved_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", dir.path.c_str(), 1);  // no npm to be found
  for (const std::string& name : dataset_registry().names()) {
    const DatasetEntry& entry = dataset_registry().at(name);
    if (!entry.prepare) continue;  // printed, not made here
    CAPTURE(name);
    const PrepareRequest request{out, Options("data prepare")};
    const std::string error = error_of([&] { entry.prepare(request); });
    CHECK(error.find("cannot create the folder '" + out + "': Not a directory") !=
          std::string::npos);
  }
  ::setenv("PATH", saved_path.c_str(), 1);
  CHECK(!std::filesystem::exists(out));
}
