// Reader errors and whole-file input/output for the datasets (datasets/read_error.h).
#include "datasets/read_error.h"

#include <filesystem>

#include "datasets/byte_stream.h"

namespace relpos {

void read_error(const std::string& reader, const std::string& path, const std::string& where,
                const std::string& what) {
  throw Error("[" + reader + "] " + path + ": " + where + ": " + what);
}

std::string shown_bytes(std::string_view text, size_t limit) {
  std::string out;
  for (const char c : text.substr(0, limit))
    out += c >= 0x20 && c < 0x7f ? std::string(1, c)
                                 : fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
  return text.size() > limit ? out + "..." : out;
}

void refuse_broken_link(const std::string& reader, const std::string& path) {
  std::error_code error, not_a_link;
  if (std::filesystem::exists(std::filesystem::status(path, error)) ||
      !std::filesystem::is_symlink(std::filesystem::symlink_status(path, not_a_link)))
    return;
  read_error(reader, path, "open",
             "a link to '" + std::filesystem::read_symlink(path, not_a_link).string() +
                 "', which leads to no file (" +
                 (error ? error.message() : "its target does not exist") +
                 "); mend or remove the link");
}

void check_data_file(const std::string& reader, const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_type type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::not_found || ec) refuse_broken_link(reader, path);
  if (type == std::filesystem::file_type::directory)
    read_error(reader, path, "open", "is a directory, not a data file");
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block)
    read_error(reader, path, "open",
               std::string("is a ") +
                   (type == std::filesystem::file_type::block ? "block" : "character") +
                   " device, not a data file");
}

std::vector<uint8_t> read_file_bytes(const std::string& reader, const std::string& path) {
  ByteStream stream(reader, path);
  // Into room reserved for the whole file (a FIFO has no size, a gzip file inflates: those grow
  // as read); the blocks are copied once, and the vector is returned without a copy.
  std::vector<uint8_t> bytes;
  if (stream.file_bytes() > 0) bytes.reserve(static_cast<size_t>(stream.file_bytes()));
  for (std::string_view block = stream.next(); !block.empty(); block = stream.next())
    bytes.insert(bytes.end(), block.begin(), block.end());
  return bytes;
}

}  // namespace relpos
