// Lines of a data file across the blocks of a ByteStream (datasets/line_stream.h).
#include "datasets/line_stream.h"

#include "datasets/read_error.h"

namespace relpos {

LineStream::LineStream(const std::string& reader, const std::string& path, int64_t max_line_bytes,
                       size_t block_bytes)
    : bytes_(reader, path, block_bytes), max_line_bytes_(max_line_bytes) {}

bool LineStream::next(std::string_view& line) {
  carried_.clear();
  bool begun = false;  // some byte of this line has been read
  for (;;) {
    if (block_.empty()) {
      block_ = bytes_.next();
      if (block_.empty()) {  // the end of the file: a last line without its newline, or none
        if (!begun) return false;
        line = carried_;
        break;
      }
    }
    begun = true;
    const size_t newline = block_.find('\n');
    const std::string_view part = block_.substr(0, newline);
    if (static_cast<int64_t>(carried_.size() + part.size()) > max_line_bytes_)
      read_error(bytes_.reader(), bytes_.path(), at_line(line_number_ + 1),
                 "line longer than " + std::to_string(max_line_bytes_) + " bytes");
    if (newline == std::string_view::npos) {
      carried_.append(part);
      block_ = {};
      continue;
    }
    block_.remove_prefix(newline + 1);
    if (carried_.empty()) {
      line = part;  // whole in this block: no copy
    } else {
      carried_.append(part);
      line = carried_;
    }
    break;
  }
  ++line_number_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return true;
}

}  // namespace relpos
