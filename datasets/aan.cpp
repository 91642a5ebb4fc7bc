// AAN reader (datasets/aan.h): streams the file line by line (datasets/line_stream.h), so an
// oversized line is refused without holding it in memory.
#include "datasets/aan.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <vector>

#include "datasets/line_stream.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

const char* const kReader = "aan";

// "0", "1", "0.0", "1.0" (any number equal to 0 or 1); anything else is an error.
int64_t parse_label(std::string_view text, const std::string& path, int64_t line) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    read_error(kReader, path, at_line(line),
               "label '" + shown_bytes(text) + "' is not a number (expected 0 or 1)");
  if (value != 0.0 && value != 1.0)
    read_error(kReader, path, at_line(line), "label '" + shown_bytes(text) + "' must be 0 or 1");
  return value == 1.0 ? 1 : 0;
}

// Byte-level ids of the first min(kAanTextBytes, max_len) bytes.
std::vector<int32_t> byte_ids(std::string_view text, int64_t max_len) {
  const size_t n =
      std::min({text.size(), static_cast<size_t>(kAanTextBytes), static_cast<size_t>(max_len)});
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(static_cast<uint8_t>(text[i])) + 1;
  return ids;
}

}  // namespace

Dataset read_aan(const std::string& path, int64_t max_len) {
  RELPOS_CHECK(max_len > 0, kReader, "max_len must be positive, got {}", max_len);
  Dataset data;
  data.name = "aan/" + std::filesystem::path(path).stem().string();
  data.vocab_size = 257;
  data.num_classes = 2;
  LineStream lines(kReader, path, kAanMaxLineBytes);
  std::string_view line;
  std::vector<std::string_view> columns;
  while (lines.next(line)) {
    columns.clear();
    size_t start = 0;
    for (;;) {
      const size_t tab = line.find('\t', start);
      columns.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    if (columns.size() != 5)
      read_error(kReader, path, at_line(lines.line_number()),
                 "expected 5 tab-separated columns (label, id1, id2, text1, text2), found " +
                     std::to_string(columns.size()));
    Example example;
    example.label = parse_label(columns[0], path, lines.line_number());
    example.tokens = byte_ids(columns[3], max_len);
    example.tokens2 = byte_ids(columns[4], max_len);
    data.examples.push_back(std::move(example));
  }
  if (data.examples.empty()) read_error(kReader, path, at_line(1), "no examples (empty file)");
  return data;
}

}  // namespace relpos
