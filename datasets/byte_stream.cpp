// Data files in blocks, gzip inflated with zlib as it is read (datasets/byte_stream.h).
#include "datasets/byte_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

#include "datasets/read_error.h"

namespace relpos {

struct ByteStream::Inflater {
  z_stream z{};
  bool member_ended = false;  // the last member read so far is complete
  bool finished = false;      // and nothing follows it

  Inflater(const std::string& reader, const std::string& path) {
    // 16 + MAX_WBITS: expect a gzip header and trailer (checked by zlib: CRC and length).
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
      read_error(reader, path, "gzip", "zlib init failed");
  }
  ~Inflater() { inflateEnd(&z); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

ByteStream::ByteStream(std::string reader, std::string path, size_t block_bytes)
    : reader_(std::move(reader)),
      path_(std::move(path)),
      out_capacity_(std::max<size_t>(block_bytes, 1)) {
  check_data_file(reader_, path_);  // before opening: a device is not opened at all
  file_.fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (file_.fd < 0)
    read_error(reader_, path_, "open", "cannot read the file (missing or no permission)");
  raw_capacity_ = block_bytes;
  struct stat status {};
  if (::fstat(file_.fd, &status) == 0 && S_ISREG(status.st_mode)) {
    file_bytes_ = static_cast<int64_t>(status.st_size);
    raw_capacity_ = std::min(raw_capacity_, static_cast<size_t>(file_bytes_));
  }
  raw_capacity_ = std::max<size_t>(raw_capacity_, 2);  // the two magic bytes come in one block
  raw_ = std::make_unique_for_overwrite<char[]>(raw_capacity_);
}

ByteStream::~ByteStream() = default;

ByteStream::Descriptor::~Descriptor() {
  if (fd >= 0) ::close(fd);
}

size_t ByteStream::fill() {
  raw_offset_ += static_cast<int64_t>(raw_size_);
  raw_size_ = 0;
  while (raw_size_ < raw_capacity_) {  // a pipe hands over less than asked: read on to the end
    const ssize_t got = ::read(file_.fd, raw_.get() + raw_size_, raw_capacity_ - raw_size_);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) read_error(reader_, path_, "read", "I/O error while reading");
    if (got == 0) break;
    raw_size_ += static_cast<size_t>(got);
  }
  return raw_size_;
}

std::string_view ByteStream::next() {
  if (!started_) {
    started_ = true;
    const size_t n = fill();
    if (n < 2 || static_cast<uint8_t>(raw_[0]) != 0x1f || static_cast<uint8_t>(raw_[1]) != 0x8b)
      return {raw_.get(), n};
    inflater_ = std::make_unique<Inflater>(reader_, path_);
    out_ = std::make_unique_for_overwrite<char[]>(out_capacity_);
    inflater_->z.next_in = reinterpret_cast<Bytef*>(raw_.get());
    inflater_->z.avail_in = static_cast<uInt>(n);
  } else if (!inflater_) {
    return {raw_.get(), fill()};
  }
  return inflate_next();
}

int64_t ByteStream::consumed() const {
  return raw_offset_ + (reinterpret_cast<const char*>(inflater_->z.next_in) - raw_.get());
}

std::string_view ByteStream::inflate_next() {
  Inflater& in = *inflater_;
  z_stream& z = in.z;
  z.next_out = reinterpret_cast<Bytef*>(out_.get());
  z.avail_out = static_cast<uInt>(out_capacity_);
  while (z.avail_out == out_capacity_ && !in.finished) {  // until some output or the end
    if (z.avail_in == 0) {
      if (fill() == 0) {
        if (!in.member_ended)
          read_error(reader_, path_, "gzip byte " + std::to_string(raw_offset_),
                     "the compressed stream ends early (truncated file)");
        in.finished = true;
        break;
      }
      z.next_in = reinterpret_cast<Bytef*>(raw_.get());
      z.avail_in = static_cast<uInt>(raw_size_);
    }
    if (in.member_ended) {
      start_next_member();
      continue;
    }
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      in.member_ended = true;
    } else if (rc != Z_OK) {
      read_error(reader_, path_, "gzip byte " + std::to_string(consumed()),
                 z.msg != nullptr ? z.msg : "truncated or corrupt stream");
    }
  }
  return {out_.get(), out_capacity_ - z.avail_out};
}

// After a member's end, with input left: another member (gzip files concatenate) must start
// there, with the magic bytes 1f 8b; anything else is refused.
void ByteStream::start_next_member() {
  z_stream& z = inflater_->z;
  const int64_t at = consumed();
  if (z.next_in[0] != 0x1f || (z.avail_in >= 2 && z.next_in[1] != 0x8b)) trailing_bytes(at);
  if (inflateReset(&z) != Z_OK)
    read_error(reader_, path_, "gzip byte " + std::to_string(at), "zlib reset failed");
  if (z.avail_in == 1) {  // the second magic byte opens the next block
    if (fill() == 0 || static_cast<uint8_t>(raw_[0]) != 0x8b) trailing_bytes(at);
    Bytef first = 0x1f;  // read again from here: raw_ holds the next block now
    z.next_in = &first;
    z.avail_in = 1;
    if (inflate(&z, Z_NO_FLUSH) != Z_OK || z.avail_in != 0)
      read_error(reader_, path_, "gzip byte " + std::to_string(at), "zlib header state");
    z.next_in = reinterpret_cast<Bytef*>(raw_.get());
    z.avail_in = static_cast<uInt>(raw_size_);
  }
  inflater_->member_ended = false;
}

void ByteStream::trailing_bytes(int64_t at) {
  while (fill() > 0) {
  }
  read_error(reader_, path_, "gzip byte " + std::to_string(at),
             std::to_string(raw_offset_ - at) +
                 " bytes after the end of the compressed stream (not another gzip member)");
}

}  // namespace relpos
