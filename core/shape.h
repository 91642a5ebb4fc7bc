// Shape and stride vectors, and the helpers every op uses to validate them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace relpos {

using Shape = std::vector<int64_t>;

// The largest size a config may give (2^40): past it a size is past any machine's memory even as
// one byte per unit, and the sums and products of sizes in the layers' index arithmetic
// (2·window + 1, max_len + CLS + SEP) stay far inside int64. Sizes below it that do not fit are
// the allocators' to refuse.
inline constexpr int64_t kLargestSize = int64_t{1} << 40;
// Throws "[who] key value is larger than any machine holds (at most 2^40)" above kLargestSize.
void check_largest_size(const std::string& who, const std::string& key, int64_t value);

// The product of the sizes (0 when one is 0); nullopt where it overflows int64. shape_numel
// throws "[shape] ..." there instead.
std::optional<int64_t> checked_numel(const Shape& shape);
int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3, 4]"

// Maps a possibly negative dim into [0, ndim); errors name `op` and the tensor rank.
int normalize_dim(int64_t dim, int ndim, const char* op);

// NumPy broadcasting of two shapes; errors name `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace relpos
