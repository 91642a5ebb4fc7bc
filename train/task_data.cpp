// Splits per dataset (train/task_data.h).
#include "train/task_data.h"

#include <filesystem>

#include "core/error.h"
#include "datasets/aan.h"
#include "datasets/cifar.h"
#include "datasets/idx.h"
#include "datasets/imdb.h"
#include "datasets/listops.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWho = "data";

std::string how_to_get(const DataConfig& data) {
  std::string how;
  if (data.dataset == "mnist" || data.dataset == "fashion-mnist" || data.dataset == "listops")
    how = fmt::format("make it with `relpos data prepare {} --out {}`", data.dataset, data.dir);
  else
    how = "see `relpos data prepare " + data.dataset + "` for where to get it";
  return how + " (or point data.dir elsewhere with --set data.dir=...)";
}

[[noreturn]] void missing(const DataConfig& data, const std::string& what) {
  throw Error(fmt::format("[{}] {} not found in '{}': {}", kWho, what, data.dir, how_to_get(data)));
}

// `name` or `name`.gz under dir.
std::string idx_file(const DataConfig& data, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"}) {
    const fs::path path = fs::path(data.dir) / candidate;
    if (fs::is_regular_file(path)) return path.string();
  }
  missing(data, name + "[.gz]");
}

// Average-pools every 28x28 image by `factor` (rounded mean of each block).
void pool_images(Dataset& dataset, int64_t factor) {
  if (factor == 1) return;
  constexpr int64_t kSide = 28;
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

// The head (1 - fraction) or the tail (fraction) of a training split.
Dataset carve(Dataset all, double fraction, bool tail, const std::string& name) {
  const auto n = static_cast<int64_t>(all.examples.size());
  const auto n_tail = static_cast<int64_t>(static_cast<double>(n) * fraction);
  auto begin = all.examples.begin() + (tail ? n - n_tail : 0);
  auto end = tail ? all.examples.end() : all.examples.end() - n_tail;
  all.examples = std::vector<Example>(std::make_move_iterator(begin), std::make_move_iterator(end));
  all.name = name;
  return all;
}

Dataset read_mnist_split(const DataConfig& data, const std::string& split) {
  const std::string prefix = split == "test" ? "t10k" : "train";
  // Looked up in this order, so a folder missing both names the images file.
  const std::string images = idx_file(data, prefix + "-images-idx3-ubyte");
  const std::string labels = idx_file(data, prefix + "-labels-idx1-ubyte");
  // Pooling and the models' grids place 28 x 28 images: any other size is refused here.
  Dataset d = read_mnist(images, labels, data.dataset + "/" + split, 28, 28);
  pool_images(d, data.image_pool);
  return d;
}

// Datasets whose validation split is the tail of train (or the test split when val_fraction = 0).
template <typename Read>
Dataset split_of_train(const DataConfig& data, const std::string& split, Read read) {
  if (split == "test") return read("test");
  if (data.val_fraction == 0) return read(split == "val" ? "test" : "train");
  return carve(read("train"), data.val_fraction, split == "val", data.dataset + "/" + split);
}

Dataset read_split(const DataConfig& data, const std::string& split) {
  const int64_t len = content_length(data);
  const fs::path dir(data.dir);
  if (data.dataset == "mnist" || data.dataset == "fashion-mnist")
    return split_of_train(data, split,
                          [&](const std::string& s) { return read_mnist_split(data, s); });
  if (data.dataset == "listops") {
    const fs::path file = dir / ("basic_" + split + ".tsv");
    if (!fs::is_regular_file(file)) missing(data, file.filename().string());
    return read_listops(file.string(), listops_tokenizer_from_name(data.tokenizer), len);
  }
  if (data.dataset == "imdb") {
    if (!fs::is_directory(dir / "aclImdb") && !fs::is_directory(dir / "train"))
      missing(data, "aclImdb/");
    return split_of_train(data, split,
                          [&](const std::string& s) { return read_imdb(data.dir, s, len); });
  }
  if (data.dataset == "aan") {
    const fs::path file =
        dir / ("new_aan_pairs." + std::string(split == "val" ? "eval" : split) + ".tsv");
    if (!fs::is_regular_file(file)) missing(data, file.filename().string());
    return read_aan(file.string(), len);
  }
  if (data.dataset == "cifar10") {
    // The folder of the .bin batches, or the one the archive unpacks into.
    const fs::path unpacked = dir / "cifar-10-batches-bin";
    const fs::path batches = fs::is_directory(unpacked) ? unpacked : dir;
    if (!fs::is_regular_file(batches / "test_batch.bin"))
      missing(data, "cifar-10-batches-bin/test_batch.bin");
    return read_cifar10(batches.string(), split);
  }
  throw Error(
      fmt::format("[{}] unknown dataset '{}'; known: mnist, fashion-mnist, listops, imdb, "
                  "aan, cifar10",
                  kWho, data.dataset));
}

}  // namespace

int64_t content_length(const DataConfig& data) {
  if (data.max_len > 0) return data.max_len;
  if (data.dataset == "mnist" || data.dataset == "fashion-mnist")
    return (28 / data.image_pool) * (28 / data.image_pool);
  if (data.dataset == "listops") return 2000;
  if (data.dataset == "imdb") return 1000;
  if (data.dataset == "aan") return 4000;
  if (data.dataset == "cifar10") return 1024;
  return 0;
}

bool is_pair_dataset(const DataConfig& data) {
  return data.dataset == "aan";
}

Dataset load_split(const DataConfig& data, const std::string& split) {
  RELPOS_CHECK(split == "train" || split == "val" || split == "test", kWho,
               "unknown split '{}'; known: train, val, test", split);
  RELPOS_CHECK(fs::is_directory(data.dir), kWho, "no folder '{}' for {}: {}", data.dir,
               data.dataset, how_to_get(data));
  Dataset d = read_split(data, split);
  const int64_t limit = split == "train" ? data.train_limit : data.eval_limit;
  if (limit > 0 && static_cast<int64_t>(d.examples.size()) > limit) d.examples.resize(limit);
  RELPOS_CHECK(!d.examples.empty(), kWho, "the {} split of '{}' in '{}' is empty", split,
               data.dataset, data.dir);
  return d;
}

}  // namespace relpos
