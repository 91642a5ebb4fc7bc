// A data file read in blocks, inflated on the way when it is gzip, so a reader can parse a file of
// any size in constant memory. read_file_bytes (datasets/read_error.h) drains one; LineStream
// (datasets/line_stream.h) splits one into lines.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace relpos {

class ByteStream {
 public:
  static constexpr size_t kBlockBytes = size_t{1} << 20;

  // Opens `path` for `reader` (the name in its errors): a folder, a device, a missing or an
  // unreadable file is an error naming it (check_data_file). A file starting with the gzip magic
  // bytes 1f 8b is inflated: concatenated members are read one after the other; bytes after the
  // last member that start no other, a truncated stream and corrupt data are errors naming the
  // compressed byte. `block_bytes` sizes the blocks read (tests use small ones).
  ByteStream(std::string reader, std::string path, size_t block_bytes = kBlockBytes);
  ~ByteStream();
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  // The next piece of the file's content (inflated where gzip), at most max(block_bytes, 2) long,
  // valid until the next call; empty after the last.
  std::string_view next();

  // The file's size on disk (compressed where gzip), or -1 where it has none (a FIFO).
  int64_t file_bytes() const { return file_bytes_; }
  const std::string& reader() const { return reader_; }
  const std::string& path() const { return path_; }

 private:
  struct Inflater;

  size_t fill();  // the next raw block into raw_; its size, 0 at the end of the file
  std::string_view inflate_next();
  void start_next_member();
  int64_t consumed() const;  // compressed bytes handed to zlib so far
  [[noreturn]] void trailing_bytes(int64_t at);

  struct Descriptor {  // the open file, closed however construction or reading ends
    int fd = -1;
    Descriptor() = default;
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor();
  };

  std::string reader_, path_;
  Descriptor file_;
  int64_t file_bytes_ = -1;
  // Blocks, not zeroed: of the file's size where that is smaller than a block (one per file of
  // IMDB's 50,000 reviews), and the inflated one for a gzip file only.
  std::unique_ptr<char[]> raw_;
  size_t raw_capacity_ = 0, raw_size_ = 0;
  int64_t raw_offset_ = 0;  // file offset of raw_[0]
  bool started_ = false;
  std::unique_ptr<Inflater> inflater_;  // set for a gzip file
  std::unique_ptr<char[]> out_;         // inflated bytes of one next()
  size_t out_capacity_ = 0;
};

}  // namespace relpos
