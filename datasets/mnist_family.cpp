// The MNIST-format datasets' reading and pooling (datasets/mnist_family.h).
#include "datasets/mnist_family.h"

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "datasets/idx.h"
#include "datasets/val_from_train.h"

namespace relpos {

namespace {

constexpr int64_t kSide = 28;

// `name` or `name`.gz in the folder.
std::string idx_file(const DataFolder& folder, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"}) {
    const std::filesystem::path path = std::filesystem::path(folder.dir) / candidate;
    if (std::filesystem::is_regular_file(path)) return path.string();
  }
  for (const std::string& candidate : {name, name + ".gz"}) folder.refuse_broken_link(candidate);
  folder.missing(name + "[.gz]");
}

}  // namespace

void pool_images(Dataset& dataset, int64_t factor) {
  if (factor == 1) return;
  const int64_t side = kSide / factor, area = factor * factor;
  for (Example& e : dataset.examples) {
    std::vector<int32_t> pooled(side * side);
    for (int64_t r = 0; r < side; ++r)
      for (int64_t c = 0; c < side; ++c) {
        int64_t sum = 0;
        for (int64_t dr = 0; dr < factor; ++dr)
          for (int64_t dc = 0; dc < factor; ++dc)
            sum += e.tokens[(r * factor + dr) * kSide + c * factor + dc];
        pooled[r * side + c] = static_cast<int32_t>((sum + area / 2) / area);
      }
    e.tokens = std::move(pooled);
  }
}

MnistFamilySource::MnistFamilySource(const Options& own)
    : pool_(own.get<int64_t>("image_pool", 1)), val_fraction_(read_val_fraction(own)) {
  RELPOS_CHECK(pool_ >= 1 && kSide % pool_ == 0, "config",
               "data.image_pool must divide 28 (1, 2, 4, 7, 14), got {}", pool_);
}

Dataset MnistFamilySource::read_split(const DataFolder& folder, const std::string& split,
                                      int64_t) const {
  return split_of_train(folder.dataset, split, val_fraction_, [&](const std::string& s) {
    const std::string prefix = s == "test" ? "t10k" : "train";
    // Looked up in this order, so a folder missing both names the images file.
    const std::string images = idx_file(folder, prefix + "-images-idx3-ubyte");
    const std::string labels = idx_file(folder, prefix + "-labels-idx1-ubyte");
    // Pooling and the models' grids place 28 x 28 images: any other size is refused here.
    Dataset d = read_mnist(images, labels, folder.dataset + "/" + s, kSide, kSide);
    pool_images(d, pool_);
    return d;
  });
}

}  // namespace relpos
