// ListOps tokenizers (fixed LRA and the bracket-dropping 2021 one) and the TSV reader
// (datasets/listops.h).
#include "datasets/listops.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "datasets/line_stream.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

constexpr const char* kReader = "listops";

// Id of a digit token '0'..'9', or -1.
int digit_of(std::string_view token) {
  return token.size() == 1 && token[0] >= '0' && token[0] <= '9' ? token[0] - '0' : -1;
}

// The fixed LRA vocabulary (ids in listops.h).
int32_t lra_id(std::string_view token) {
  static constexpr std::string_view kOperators[] = {"[MIN", "[MAX", "[MED", "[SM", "X"};
  for (int32_t i = 0; i < 5; ++i)
    if (token == kOperators[i]) return i + 1;
  const int d = digit_of(token);
  return d >= 0 ? 6 + d : 16;
}

// The lra_2021 vocabulary (ids in listops.h).
int32_t lra_2021_id(std::string_view token) {
  static constexpr std::string_view kOperators[] = {"MIN", "MAX", "MED", "SM"};
  for (int32_t i = 0; i < 4; ++i)
    if (token == kOperators[i]) return i + 1;
  const int d = digit_of(token);
  return d >= 0 ? 5 + d : 15;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

constexpr size_t kNoUnknown = std::string_view::npos;

// Fixed LRA: `]` -> `X`, drop `(` and `)`, split on whitespace. Appends the ids of `source` to
// `ids` in one pass (a token is kept only as long as the longest known one, "[MIN": a longer one
// is unknown anyway) and returns the byte offset in `source` of the first token outside the
// vocabulary (id 16), or kNoUnknown.
size_t tokenize_lra(std::string_view source, std::vector<int32_t>* ids) {
  constexpr size_t kLongest = 4;
  char kept[kLongest];
  size_t length = 0;  // of the token read so far, beyond kLongest too
  size_t token_start = 0;
  size_t unknown_at = kNoUnknown;
  const auto flush = [&] {
    if (length == 0) return;
    const int32_t id = length <= kLongest ? lra_id(std::string_view(kept, length)) : 16;
    if (id == 16 && unknown_at == kNoUnknown) unknown_at = token_start;
    ids->push_back(id);
    length = 0;
  };
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (is_space(c)) {
      flush();
    } else if (c != '(' && c != ')') {
      if (length == 0) token_start = i;
      if (length < kLongest) kept[length] = c == ']' ? 'X' : c;
      ++length;
    }
  }
  flush();
  return unknown_at;
}

// The token of the fixed LRA tokenizer that starts at source[start], as the tokenizer reads it.
std::string lra_token_at(std::string_view source, size_t start) {
  std::string token;
  for (size_t i = start; i < source.size() && !is_space(source[i]); ++i)
    if (source[i] != '(' && source[i] != ')') token += source[i] == ']' ? 'X' : source[i];
  return token;
}

// tfds' default Tokenizer: maximal runs of ASCII letters and digits.
void tokenize_lra_2021(std::string_view source, std::vector<int32_t>* ids) {
  size_t i = 0;
  while (i < source.size()) {
    if (!is_alnum(source[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < source.size() && is_alnum(source[end])) ++end;
    ids->push_back(lra_2021_id(source.substr(i, end - i)));
    i = end;
  }
}

// The dataset name: "listops/" + the file name without its extensions.
std::string dataset_name(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  stem = stem.substr(0, stem.find('.'));
  return "listops/" + stem;
}

}  // namespace

ListOpsTokenizer listops_tokenizer_from_name(const std::string& name) {
  if (name == "lra") return ListOpsTokenizer::lra;
  if (name == "lra_2021") return ListOpsTokenizer::lra_2021;
  fail(kReader, "unknown tokenizer '{}'; known: lra, lra_2021", name);
}

int64_t listops_vocab_size(ListOpsTokenizer tokenizer) {
  return tokenizer == ListOpsTokenizer::lra ? 17 : 16;
}

std::vector<int32_t> tokenize_listops(std::string_view source, ListOpsTokenizer tokenizer) {
  std::vector<int32_t> ids;
  if (tokenizer == ListOpsTokenizer::lra) {
    tokenize_lra(source, &ids);
  } else {
    tokenize_lra_2021(source, &ids);
  }
  return ids;
}

Dataset read_listops(const std::string& path, ListOpsTokenizer tokenizer, int64_t max_len) {
  RELPOS_CHECK(max_len > 0, kReader, "max_len must be positive, got {}", max_len);
  Dataset data;
  data.name = dataset_name(path);
  data.vocab_size = listops_vocab_size(tokenizer);
  data.num_classes = 10;

  LineStream lines(kReader, path, kListOpsMaxLineBytes);
  std::string_view line;
  std::vector<int32_t> ids;  // one line's tokens, before they are cut to max_len
  while (lines.next(line)) {
    const int64_t line_no = lines.line_number();
    if (line_no == 1) {
      if (line != "Source\tTarget")
        read_error(kReader, path, at_line(1),
                   "expected the header 'Source<TAB>Target', found '" + shown_bytes(line) + "'");
      continue;
    }
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      read_error(kReader, path, at_line(line_no), "expected 'source<TAB>target', found no tab");
    const std::string_view source = line.substr(0, tab);
    const std::string_view target = line.substr(tab + 1);
    if (target.size() != 1 || digit_of(target) < 0)
      read_error(kReader, path, at_line(line_no),
                 "target '" + shown_bytes(target) + "' is not an integer 0-9");
    ids.clear();
    if (tokenizer == ListOpsTokenizer::lra) {
      // The fixed LRA vocabulary is closed: a token outside it (id 16) is an error naming its
      // line and column (1-based byte column of the line) rather than a silent unknown id.
      if (const size_t unknown_at = tokenize_lra(source, &ids); unknown_at != kNoUnknown)
        read_error(kReader, path, at_line(line_no) + ", column " + std::to_string(unknown_at + 1),
                   "token '" + shown_bytes(lra_token_at(source, unknown_at)) +
                       "' is not in the ListOps vocabulary ([MIN [MAX [MED [SM ] 0-9, "
                       "parentheses)");
    } else {
      tokenize_lra_2021(source, &ids);
    }
    if (ids.empty())
      read_error(kReader, path, at_line(line_no), "empty source (no tokens before the tab)");
    Example example;
    example.tokens.assign(ids.begin(),
                          ids.begin() + std::min(static_cast<int64_t>(ids.size()), max_len));
    example.label = digit_of(target);
    data.examples.push_back(std::move(example));
  }
  if (lines.line_number() == 0)
    read_error(kReader, path, at_line(1), "expected the header 'Source<TAB>Target'");
  if (data.examples.empty())
    read_error(kReader, path, at_line(lines.line_number() + 1),
               "expected examples after the header");
  return data;
}

}  // namespace relpos
