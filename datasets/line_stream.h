// A text data file line by line, in constant memory (a ByteStream below it: plain or gzip), for
// the line-based readers (ListOps, AAN, tsv).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "datasets/byte_stream.h"

namespace relpos {

class LineStream {
 public:
  // Lines end in '\n', a '\r' before it is dropped, and the last line may lack its newline. A
  // line of more than `max_line_bytes` bytes is an error naming it, found before it is held.
  LineStream(const std::string& reader, const std::string& path, int64_t max_line_bytes,
             size_t block_bytes = ByteStream::kBlockBytes);

  // The next line into `line` (valid until the next call); false after the last.
  bool next(std::string_view& line);
  // 1-based number of the line last returned (0 before the first).
  int64_t line_number() const { return line_number_; }

 private:
  ByteStream bytes_;
  int64_t max_line_bytes_;
  std::string_view block_;  // the part of the current block not yet returned
  std::string carried_;     // a line begun in an earlier block
  int64_t line_number_ = 0;
};

}  // namespace relpos
