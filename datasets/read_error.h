// Errors of the data readers: every malformed input names the reader, the file, the position
// (byte offset or line) and what was expected, e.g.
//   [mnist] data/train-images-idx3-ubyte: byte 0: magic number 0x00000801, expected 0x00000803
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/file_write.h"  // write_file_atomic, for the writers beside the readers

namespace relpos {

// Throws relpos::Error("[reader] path: where: what").
[[noreturn]] void read_error(const std::string& reader, const std::string& path,
                             const std::string& where, const std::string& what);

// `text` from a data file as an error quotes it: printable ASCII as it is, any other byte as
// \xNN, at most `limit` bytes (then "..."), so a NUL or a control byte cannot cut or garble the
// one-line message and a long field cannot flood it.
std::string shown_bytes(std::string_view text, size_t limit = 40);

inline std::string at_byte(int64_t offset) {
  return "byte " + std::to_string(offset);
}
inline std::string at_line(int64_t line) {
  return "line " + std::to_string(line);
}

// Refuses a path that is a link leading to no file (its target missing, or a loop): "[reader]
// path: open: a link to 'target', which leads to no file (why); mend or remove the link".
void refuse_broken_link(const std::string& reader, const std::string& path);

// Refuses a data file path that names a folder or a device ("is a character device, not a data
// file": /dev/zero would be read without end) or a link that leads to no file
// (refuse_broken_link); regular files, links to them and pipes pass.
void check_data_file(const std::string& reader, const std::string& path);

// The whole file as bytes; a file starting with the gzip magic bytes is inflated (ByteStream,
// datasets/byte_stream.h). Missing, unreadable or corrupt-gzip files are errors naming the path.
std::vector<uint8_t> read_file_bytes(const std::string& reader, const std::string& path);

}  // namespace relpos
