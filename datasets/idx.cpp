// IDX reading and writing, and the MNIST images + labels reader (datasets/idx.h).
#include "datasets/idx.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "datasets/read_error.h"

namespace relpos {

namespace {

constexpr uint8_t kUnsignedByte = 0x08;

uint32_t read_be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         uint32_t{b[at + 3]};
}

void append_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

std::string dims_text(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// prod(dims) as text, exact even where it would overflow 64 bits.
std::string payload_size_text(const std::vector<int64_t>& dims) {
  uint64_t product = 1;
  for (const int64_t d : dims)
    if (__builtin_mul_overflow(product, static_cast<uint64_t>(d), &product)) return "over 2^64";
  return std::to_string(product);
}

}  // namespace

IdxArray read_idx(const std::string& reader, const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(reader, path);
  if (bytes.size() < 4)
    read_error(
        reader, path, at_byte(static_cast<int64_t>(bytes.size())),
        fmt::format("file ends after {} bytes; expected a 4-byte IDX magic number", bytes.size()));
  if (bytes[0] != 0 || bytes[1] != 0)
    read_error(reader, path, at_byte(0),
               fmt::format("magic number 0x{:08x}; expected 0x0000 08 NN (an IDX file)",
                           read_be32(bytes, 0)));
  if (bytes[2] != kUnsignedByte)
    read_error(reader, path, at_byte(2),
               fmt::format("data type 0x{:02x}; expected 0x08 (unsigned byte)", bytes[2]));
  const int ndims = bytes[3];
  if (ndims < 1 || ndims > 4)
    read_error(reader, path, at_byte(3), fmt::format("{} dimensions; expected 1 to 4", ndims));
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (bytes.size() < header)
    read_error(reader, path, at_byte(static_cast<int64_t>(bytes.size())),
               fmt::format("file ends inside the header; {} dimensions need {} header bytes", ndims,
                           header));
  IdxArray out;
  const uint64_t available = bytes.size() - header;
  uint64_t size = 1;  // prod(dims), capped at available + 1 so it cannot overflow
  for (int i = 0; i < ndims; ++i) {
    const uint32_t d = read_be32(bytes, 4 + 4 * static_cast<size_t>(i));
    if (d == 0) read_error(reader, path, at_byte(4 + 4 * i), fmt::format("dimension {} is 0", i));
    out.dims.push_back(d);
    size = d > available / size ? available + 1 : size * d;  // stays capped once too big
  }
  if (size > available)
    read_error(reader, path, at_byte(static_cast<int64_t>(bytes.size())),
               fmt::format("file ends after {} payload bytes; dims {} need {}", available,
                           dims_text(out.dims), payload_size_text(out.dims)));
  if (size < available)
    read_error(reader, path, at_byte(static_cast<int64_t>(header + size)),
               fmt::format("{} bytes after the end of the payload of dims {}", available - size,
                           dims_text(out.dims)));
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

void write_idx(const std::string& path, const std::vector<int64_t>& dims,
               const std::vector<uint8_t>& bytes) {
  RELPOS_CHECK(!dims.empty() && dims.size() <= 4, "idx", "{}: {} dimensions; expected 1 to 4", path,
               dims.size());
  int64_t size = 1;
  for (const int64_t d : dims) {
    RELPOS_CHECK(d > 0 && d <= std::numeric_limits<uint32_t>::max(), "idx",
                 "{}: dims {} must each be in 1..2^32-1", path, dims_text(dims));
    size *= d;
  }
  RELPOS_CHECK(static_cast<int64_t>(bytes.size()) == size, "idx",
               "{}: {} bytes given for dims {} (need {})", path, bytes.size(), dims_text(dims),
               size);
  std::vector<uint8_t> file = {0, 0, kUnsignedByte, static_cast<uint8_t>(dims.size())};
  for (const int64_t d : dims) append_be32(file, static_cast<uint32_t>(d));
  file.insert(file.end(), bytes.begin(), bytes.end());
  write_file_atomic(path, file);
}

void check_mnist_pair(const std::string& reader, const std::string& images_path,
                      const IdxArray& images, const std::string& labels_path,
                      const IdxArray& labels) {
  if (images.dims.size() != 3)
    read_error(reader, images_path, at_byte(3),
               fmt::format("{} dimensions; expected 3 (images, rows, cols)", images.dims.size()));
  if (labels.dims.size() != 1)
    read_error(reader, labels_path, at_byte(3),
               fmt::format("{} dimensions; expected 1 (labels)", labels.dims.size()));
  if (labels.dims[0] != images.dims[0])
    read_error(reader, labels_path, at_byte(4),
               fmt::format("{} labels, but {} holds {} images", labels.dims[0], images_path,
                           images.dims[0]));
  const int64_t labels_header = 8;  // magic + one dim
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      read_error(reader, labels_path, at_byte(labels_header + static_cast<int64_t>(i)),
                 fmt::format("label {} of image {}; expected 0 to 9", labels.data[i], i));
}

Dataset read_mnist(const std::string& images_path, const std::string& labels_path,
                   const std::string& name, int64_t rows, int64_t cols) {
  const std::string reader = name.substr(0, name.find('/'));
  const IdxArray images = read_idx(reader, images_path);
  const IdxArray labels = read_idx(reader, labels_path);
  check_mnist_pair(reader, images_path, images, labels_path, labels);
  if (rows > 0 && (images.dims[1] != rows || images.dims[2] != cols))
    read_error(reader, images_path, "header",
               fmt::format("images are {} x {}; expected {} x {}", images.dims[1], images.dims[2],
                           rows, cols));
  const int64_t n = images.dims[0];
  const int64_t pixels = images.dims[1] * images.dims[2];  // [rows, cols] in raster order
  Dataset out{name, 256, 10, {}};
  out.examples.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Example& e = out.examples[static_cast<size_t>(i)];
    const auto first = images.data.begin() + static_cast<std::ptrdiff_t>(i * pixels);
    e.tokens.assign(first, first + static_cast<std::ptrdiff_t>(pixels));
    e.label = labels.data[static_cast<size_t>(i)];
  }
  return out;
}

}  // namespace relpos
