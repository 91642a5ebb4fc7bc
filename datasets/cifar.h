// CIFAR-10 binary batches (cifar-10-batches-bin) as the LRA Image task: each 32x32 RGB image
// becomes 1024 8-bit gray tokens in raster order (vocab 256, 10 classes). Pixel value 0 (black)
// is a real token: unlike the LRA reference, which pads with 0, nothing here is padding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace relpos {

// TF's tf.image.rgb_to_grayscale on a uint8 image, exactly: in float32, each channel is scaled
// by 1/255, gray = 0.2989 r + 0.5870 g + 0.1140 b, and the result goes back to uint8 as
// tf.image.convert_image_dtype does: multiplied by 255.5 and truncated (not rounded).
uint8_t rgb_to_gray(uint8_t r, uint8_t g, uint8_t b);

// One batch file: records of 1 label byte (0..9) + 3072 bytes (1024 R, 1024 G, 1024 B, each a
// 32x32 plane in raster order), appended to `out` as gray examples. The file size must be a
// multiple of 3073 (the error names the offset of the incomplete record).
void read_cifar10_batch(const std::string& path, std::vector<Example>& out);

// split "train": the first 90% of data_batch_1.bin .. data_batch_5.bin in order (45,000 of
// 50,000); "val": the last 10% (5,000); "test": test_batch.bin (10,000). `dir` holds the .bin
// files (e.g. cifar-10-batches-bin/); a missing file is an error naming it.
Dataset read_cifar10(const std::string& dir, const std::string& split);

}  // namespace relpos
