// ByteStream and LineStream: a file read in blocks of any size gives the bytes and the lines the
// whole file holds, plain or gzip, with the same errors, whichever block a gzip member, a magic
// byte, a '\r' or a newline falls in.
#include <string>
#include <string_view>
#include <vector>

#include "datasets/byte_stream.h"
#include "datasets/line_stream.h"
#include "datasets/read_error.h"
#include "tests/datasets/gzip_fixture.h"
#include "tests/harness.h"

using namespace relpos;
using namespace std::string_literals;

namespace {

std::vector<uint8_t> bytes_of(std::string_view text) {
  return {text.begin(), text.end()};
}

std::vector<uint8_t> joined(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The whole content of `path` read through blocks of `block` bytes.
std::string drained(const std::string& path, size_t block) {
  ByteStream stream("test", path, block);
  std::string out;
  for (std::string_view piece = stream.next(); !piece.empty(); piece = stream.next()) {
    CHECK(piece.size() <= std::max<size_t>(block, 2));
    out += piece;
  }
  CHECK(stream.next().empty());  // and stays at the end
  return out;
}

std::string drain_error(const std::string& path, size_t block) {
  return test::error_of([&] { drained(path, block); });
}

// The block sizes tried: every small one, so each boundary falls everywhere, and a few large.
std::vector<size_t> block_sizes() {
  std::vector<size_t> sizes;
  for (size_t b = 1; b <= 40; ++b) sizes.push_back(b);
  for (const size_t b : {size_t{255}, size_t{256}, size_t{4096}, ByteStream::kBlockBytes})
    sizes.push_back(b);
  return sizes;
}

}  // namespace

TEST_CASE("byte stream: plain, gzip and concatenated gzip read alike in blocks of any size") {
  test::ScratchDir dir;
  std::vector<uint8_t> a(3000), b(900);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 2654435761u) >> 11);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i % 7);
  const std::string both(reinterpret_cast<const char*>(joined(a, b).data()), a.size() + b.size());
  const std::string plain = dir.file("plain.bin"), packed = dir.file("packed.gz"),
                    members = dir.file("members.gz"), empty = dir.file("empty.bin");
  write_file_atomic(plain, joined(a, b));
  write_file_atomic(packed, test::gzip_bytes(joined(a, b)));
  write_file_atomic(members, joined(test::gzip_bytes(a), test::gzip_bytes(b)));
  write_file_atomic(empty, std::vector<uint8_t>{});
  for (const size_t block : block_sizes()) {
    CAPTURE(block);
    CHECK(drained(plain, block) == both);
    CHECK(drained(packed, block) == both);
    CHECK(drained(members, block) == both);
    CHECK(drained(empty, block).empty());
  }
  // One byte 0x1f alone is no gzip file: it is read as it is.
  const std::string lone = dir.file("lone.bin");
  write_file_atomic(lone, std::vector<uint8_t>{0x1f});
  CHECK(drained(lone, 1) == "\x1f");
}

TEST_CASE("byte stream: bytes after the last member and a cut stream are refused at any block") {
  test::ScratchDir dir;
  const std::vector<uint8_t> data(2000, 5);
  const std::vector<uint8_t> member = test::gzip_bytes(data);
  const std::string end = std::to_string(member.size());
  const std::string after = " after the end of the compressed stream (not another gzip member)";
  // Trailing bytes that start no member, among them a first magic byte with no second after it
  // or a wrong one: the magic bytes then straddle a block boundary at some block sizes.
  const std::vector<std::pair<std::string, std::string>> trailing = {
      {"junk", "4 bytes"}, {"\x1f", "1 bytes"}, {"\x1f\x00"s, "2 bytes"}, {"\x1fx!", "3 bytes"}};
  for (const auto& [tail, count] : trailing) {
    const std::string path = dir.file("trailing.gz");
    write_file_atomic(path, joined(member, bytes_of(tail)));
    for (const size_t block : block_sizes()) {
      CAPTURE(block);
      CHECK(drain_error(path, block) ==
            "[test] " + path + ": gzip byte " + end + ": " + count + after);
    }
  }
  // A stream cut short: the same error whatever the block size, naming the file's last byte.
  for (const size_t cut : {size_t{12}, member.size() / 2, member.size() - 1}) {
    const std::string path = dir.file("cut.gz");
    write_file_atomic(path, std::vector<uint8_t>(member.begin(), member.begin() + cut));
    const std::string whole = drain_error(path, ByteStream::kBlockBytes);
    CHECK(whole.find("[test] " + path + ": gzip byte ") == 0);
    for (const size_t block : block_sizes()) {
      CAPTURE(block);
      CHECK(drain_error(path, block) == whole);
    }
  }
}

TEST_CASE("line stream: lines across blocks, CRLF split between blocks, the last line, the limit") {
  test::ScratchDir dir;
  const std::string text = "first\r\n\r\n\nsecond line\rx\n" + std::string(31, 'y') + "\r\nend";
  const std::vector<std::string> expected = {
      "first", "", "", "second line\rx", std::string(31, 'y'), "end"};
  const std::string plain = dir.file("lines.tsv"), packed = dir.file("lines.tsv.gz");
  write_file_atomic(plain, bytes_of(text));
  write_file_atomic(packed, test::gzip_bytes(bytes_of(text)));
  for (const std::string& path : {plain, packed}) {
    for (const size_t block : block_sizes()) {
      CAPTURE(path);
      CAPTURE(block);
      LineStream stream("test", path, 32, block);
      std::vector<std::string> lines;
      std::string_view line;
      while (stream.next(line)) {
        lines.emplace_back(line);
        CHECK(stream.line_number() == static_cast<int64_t>(lines.size()));
      }
      CHECK(lines == expected);
      CHECK(!stream.next(line));
      // A line of 32 bytes with its '\r' passes a limit of 32 and is refused by one of 31.
      LineStream tight("test", path, 31, block);
      CHECK(test::error_of([&] {
              while (tight.next(line)) {
              }
            }) == "[test] " + path + ": line 5: line longer than 31 bytes");
    }
  }
  // A file ending in its newline has no empty last line; an empty file has no line at all.
  const std::string ended = dir.file("ended.tsv"), empty = dir.file("empty.tsv");
  write_file_atomic(ended, bytes_of("a\nb\n"));
  write_file_atomic(empty, std::vector<uint8_t>{});
  for (const size_t block : {size_t{1}, size_t{2}, size_t{3}, ByteStream::kBlockBytes}) {
    LineStream two("test", ended, 10, block);
    std::string_view line;
    CHECK((two.next(line) && line == "a" && two.next(line) && line == "b" && !two.next(line)));
    LineStream none("test", empty, 10, block);
    CHECK(!none.next(line));
    CHECK(none.line_number() == 0);
  }
}
