// CIFAR-10 binary batches to gray token sequences, and the train/val/test splits
// (datasets/cifar.h).
#include "datasets/cifar.h"

#include <fmt/format.h>

#include <filesystem>

#include "datasets/read_error.h"

namespace relpos {

namespace {

constexpr int64_t kPixels = 32 * 32;
constexpr int64_t kRecord = 1 + 3 * kPixels;  // label byte + R, G, B planes

}  // namespace

uint8_t rgb_to_gray(uint8_t r, uint8_t g, uint8_t b) {
  // convert_image_dtype(uint8 -> float32): x * (1/255), the scale rounded to float32.
  const float scale = 1.0f / 255.0f;
  const float gray = static_cast<float>(r) * scale * 0.2989f +
                     static_cast<float>(g) * scale * 0.5870f +
                     static_cast<float>(b) * scale * 0.1140f;
  // convert_image_dtype(float32 -> uint8): cast(x * (255 + 0.5)), a truncation.
  const float scaled = gray * 255.5f;
  return static_cast<uint8_t>(scaled >= 255.0f ? 255.0f : scaled);
}

void read_cifar10_batch(const std::string& path, std::vector<Example>& out) {
  const std::vector<uint8_t> bytes = read_file_bytes("cifar10", path);
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size == 0)
    read_error("cifar10", path, at_byte(0),
               fmt::format("no records; a batch holds records of {} bytes (1 label + 3072 pixel "
                           "bytes)",
                           kRecord));
  if (size % kRecord != 0)
    read_error("cifar10", path, at_byte(size - size % kRecord),
               fmt::format("incomplete record of {} bytes; each record is {} bytes (1 label + "
                           "3072 pixel bytes), so the file size must be a multiple of {}",
                           size % kRecord, kRecord, kRecord));
  for (int64_t at = 0; at < size; at += kRecord) {
    const uint8_t label = bytes[static_cast<size_t>(at)];
    if (label > 9)
      read_error("cifar10", path, at_byte(at),
                 fmt::format("label {} of record {}; expected 0 to 9", label, at / kRecord));
    Example e;
    e.label = label;
    e.tokens.resize(kPixels);
    const uint8_t* red = bytes.data() + at + 1;  // [32, 32] each plane
    const uint8_t* green = red + kPixels;
    const uint8_t* blue = green + kPixels;
    for (int64_t p = 0; p < kPixels; ++p)
      e.tokens[static_cast<size_t>(p)] = rgb_to_gray(red[p], green[p], blue[p]);
    out.push_back(std::move(e));
  }
}

Dataset read_cifar10(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "val" && split != "test")
    fail("cifar10", "unknown split '{}'; known: test, train, val", split);
  std::vector<std::string> files;
  if (split == "test") {
    files.push_back("test_batch.bin");
  } else {
    for (int i = 1; i <= 5; ++i) files.push_back(fmt::format("data_batch_{}.bin", i));
  }
  std::vector<Example> examples;
  for (const std::string& file : files) {
    const std::string path = (std::filesystem::path(dir) / file).string();
    refuse_broken_link("cifar10", path);
    if (!std::filesystem::is_regular_file(path))
      read_error("cifar10", path, "open",
                 "missing; expected the CIFAR-10 binary batches data_batch_1.bin .. "
                 "data_batch_5.bin and test_batch.bin here (from "
                 "www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz)");
    read_cifar10_batch(path, examples);
  }
  if (split != "test") {
    const auto train_count = static_cast<std::ptrdiff_t>(examples.size() - examples.size() / 10);
    if (split == "train")
      examples.erase(examples.begin() + train_count, examples.end());
    else
      examples.erase(examples.begin(), examples.begin() + train_count);
  }
  return Dataset{"cifar10/" + split, 256, 10, std::move(examples)};
}

}  // namespace relpos
