// The `cifar10` dataset (LRA Image): CIFAR-10's binary batches as 1,024 gray pixel tokens, 10
// classes, read by datasets/cifar.h from cifar-10-batches-bin/ (or from DIR itself).
#include <filesystem>

#include "datasets/cifar.h"
#include "datasets/dataset_registry.h"

namespace relpos {

namespace {

class Cifar10Source final : public DatasetSource {
 public:
  explicit Cifar10Source(const Options&) {}
  int64_t default_length() const override { return 1024; }
  bool fixed_length() const override { return true; }
  Dataset read_split(const DataFolder& folder, const std::string& split, int64_t) const override {
    // The folder of the .bin batches, or the one the archive unpacks into.
    const std::filesystem::path unpacked =
        std::filesystem::path(folder.dir) / "cifar-10-batches-bin";
    const std::filesystem::path batches =
        std::filesystem::is_directory(unpacked) ? unpacked : std::filesystem::path(folder.dir);
    if (!std::filesystem::is_regular_file(batches / "test_batch.bin")) {
      folder.refuse_broken_link(batches == unpacked ? "cifar-10-batches-bin/test_batch.bin"
                                                    : "test_batch.bin");
      folder.missing("cifar-10-batches-bin/test_batch.bin");
    }
    return read_cifar10(batches.string(), split);
  }
};

}  // namespace

RELPOS_REGISTER_DATASET(
    "cifar10",
    {.kind = TaskKind::classification,
     .description = "LRA Image: CIFAR-10 photos as 32x32 gray pixel tokens, 10 classes",
     .how_to_get =
         "cifar10: download https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz (the binary\n"
         "  version) and unpack it so that DIR/cifar-10-batches-bin/ holds data_batch_1.bin ..\n"
         "  data_batch_5.bin and test_batch.bin (10,000 records of 3,073 bytes each).",
     .make = make_source<Cifar10Source>,
     .prepare = nullptr});

}  // namespace relpos
