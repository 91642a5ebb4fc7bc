// IDX files (the MNIST / Fashion-MNIST format): magic 0x00 0x00 0x08 NN (unsigned bytes, NN dims),
// NN big-endian u32 dims, then exactly prod(dims) bytes. Reading (raw or .gz), writing, and the
// MNIST pair reader that turns images + labels into a Dataset of pixel tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace relpos {

// An unsigned-byte IDX array: dims (1 to 4 of them, each > 0) and the row-major payload.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // prod(dims) bytes
};

// Reads an IDX file (gzip-compressed if it ends in .gz or starts with the gzip magic). Errors
// (named `reader`) for a wrong magic or data-type byte, 0 or more than 4 dims, a dim of 0, and a
// payload shorter or longer than the dims say, each naming the byte offset.
IdxArray read_idx(const std::string& reader, const std::string& path);

// Writes an uncompressed unsigned-byte IDX file atomically; bytes.size() must be prod(dims).
void write_idx(const std::string& path, const std::vector<int64_t>& dims,
               const std::vector<uint8_t>& bytes);

// Checks that images [n, rows, cols] and labels [n] form an MNIST pair: 3 and 1 dims, equal
// counts (the error names both files), every label in 0..9 (the error names its byte offset).
void check_mnist_pair(const std::string& reader, const std::string& images_path,
                      const IdxArray& images, const std::string& labels_path,
                      const IdxArray& labels);

// Images [n, rows, cols] (28 x 28 for MNIST; any size is accepted) and labels [n] in 0..9.
// Each image becomes one example whose tokens are its pixel values 0..255 in raster order
// (row by row): vocab_size 256, num_classes 10, and 0 (black) is a real token, not padding.
// No CLS/SEP ids are added here: a model that wants them asks the DataLoader for them.
// `name` names the dataset ("mnist/train"); its part before '/' names the reader in errors.
// Image and label counts must agree (the error names both files). rows, cols > 0: the geometry
// the caller relies on (pooling, a grid); images of another size are an error naming the file
// and the dims found.
Dataset read_mnist(const std::string& images_path, const std::string& labels_path,
                   const std::string& name, int64_t rows = 0, int64_t cols = 0);

}  // namespace relpos
