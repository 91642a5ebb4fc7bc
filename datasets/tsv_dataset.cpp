// The `tsv` dataset: the user's own labelled text. data.dir holds train.tsv, valid.tsv and
// test.tsv, one example per line as `label<TAB>text` (a final line without '\n' and CRLF line ends
// are fine; so is a UTF-8 byte-order mark at the start, as spreadsheets write it), labels 0..C-1
// with C = 1 + the largest training label, at least 2 and at most the number of training lines.
// Own key `data.tokens`:
//   bytes (default): id = byte + 1, 0 = padding, vocab 257 (as datasets/imdb.h);
//   words: split on whitespace; 0 = padding, 1 = a word not in the training split, then the
//          training split's words in order of first appearance; vocab 2 + distinct words.
// Texts are cut to data.max_len tokens (default 512). Every malformed line is an error naming the
// file and the line: no tab, a label that is not a non-negative integer, an empty text, a label
// of valid/test that is not a training class, a line of more than 64 MiB; train.tsv with one class,
// or with a label that makes more classes than it has lines (an id column read as labels), is
// refused too.
#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/dataset_registry.h"
#include "datasets/line_stream.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

constexpr const char* kReader = "tsv";
// A text is cut to data.max_len after its line is read; a longer line than this is no text of a
// labelled example but a file of another kind (it was held whole however large).
constexpr int64_t kMaxLineBytes = int64_t{64} << 20;

struct Line {
  int64_t number = 0;  // 1-based
  int64_t label = 0;
  std::string text;
};

// The examples of one file, each line checked; `path` names it in errors.
std::vector<Line> read_lines(const std::string& path) {
  LineStream stream(kReader, path, kMaxLineBytes);
  std::vector<Line> lines;
  std::string_view line;
  while (stream.next(line)) {
    const int64_t number = stream.line_number();
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // UTF-8 BOM
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      read_error(kReader, path, at_line(number), "no tab; expected label<TAB>text");
    const std::string_view label = line.substr(0, tab);
    Line parsed{number, 0, std::string(line.substr(tab + 1))};
    const auto [at, ec] = std::from_chars(label.data(), label.data() + label.size(), parsed.label);
    if (label.empty() || ec != std::errc() || at != label.data() + label.size())
      read_error(kReader, path, at_line(number),
                 "label '" + shown_bytes(label) + "' is not an integer; expected 0, 1, 2, ...");
    if (parsed.label < 0)
      read_error(kReader, path, at_line(number),
                 "label " + std::to_string(parsed.label) + " is negative; expected 0, 1, 2, ...");
    if (parsed.text.empty())
      read_error(kReader, path, at_line(number), "empty text; expected label<TAB>text");
    lines.push_back(std::move(parsed));
  }
  if (lines.empty()) read_error(kReader, path, at_line(1), "no examples; expected label<TAB>text");
  return lines;
}

// C = 1 + the largest label of train.tsv's `lines`: at least 2, and no more than the lines (a
// larger C is a column of ids or counts read as labels, and would overflow at the largest int64).
int64_t count_classes(const std::string& path, const std::vector<Line>& lines) {
  const auto largest = std::max_element(
      lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.label < b.label; });
  const int64_t count = static_cast<int64_t>(lines.size());
  if (largest->label >= count)
    read_error(kReader, path, at_line(largest->number),
               "label " + std::to_string(largest->label) + " would make " +
                   std::to_string(static_cast<uint64_t>(largest->label) + 1) + " classes for " +
                   std::to_string(count) +
                   " lines; labels are 0, 1, 2, ... up to the number of classes less 1");
  if (largest->label == 0)
    read_error(kReader, path, "labels",
               "all 0; a classifier needs two classes or more (labels 0, 1, 2, ...)");
  return largest->label + 1;
}

// The whitespace-separated words of `text`.
std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  constexpr std::string_view kSpace = " \t\r\v\f";
  for (size_t start = text.find_first_not_of(kSpace); start != std::string_view::npos;) {
    const size_t end = std::min(text.find_first_of(kSpace, start), text.size());
    words.push_back(text.substr(start, end - start));
    start = text.find_first_not_of(kSpace, end);
  }
  return words;
}

// data.tokens: true for words, false for bytes.
bool reads_words(const Options& own) {
  const auto tokens = own.get<std::string>("tokens", "bytes");
  RELPOS_CHECK(tokens == "bytes" || tokens == "words", "config",
               "data.tokens must be bytes or words, got '{}'", tokens);
  return tokens == "words";
}

class TsvSource final : public DatasetSource {
 public:
  explicit TsvSource(const Options& own) : words_(reads_words(own)) {}
  int64_t default_length() const override { return 512; }

  Dataset read_split(const DataFolder& folder, const std::string& split,
                     int64_t max_len) const override {
    const std::string train_path = folder.file("train.tsv");
    const std::vector<Line> train = read_lines(train_path);
    const int64_t classes = count_classes(train_path, train);
    std::unordered_map<std::string, int32_t> vocabulary;  // word -> id (words only)
    for (const Line& line : train) {
      if (words_)
        for (std::string_view word : words_of(line.text))
          vocabulary.emplace(word, static_cast<int32_t>(vocabulary.size()) + 2);
    }
    const std::string path =
        split == "train" ? train_path : folder.file(split == "val" ? "valid.tsv" : "test.tsv");
    Dataset d;
    d.name = folder.dataset + "/" + split;
    d.vocab_size = words_ ? 2 + static_cast<int64_t>(vocabulary.size()) : 257;
    d.num_classes = classes;
    for (const Line& line : split == "train" ? train : read_lines(path)) {
      if (line.label >= classes)
        read_error(kReader, path, at_line(line.number),
                   "label " + std::to_string(line.label) + " is not a class of " + train_path +
                       " (0 to " + std::to_string(classes - 1) + ")");
      Example e;
      e.label = line.label;
      if (words_) {
        const std::vector<std::string_view> words = words_of(line.text);
        if (words.empty())
          read_error(kReader, path, at_line(line.number),
                     "no words in the text; expected label<TAB>text");
        for (std::string_view word : words) {
          if (static_cast<int64_t>(e.tokens.size()) == max_len) break;
          const auto it = vocabulary.find(std::string(word));
          e.tokens.push_back(it == vocabulary.end() ? 1 : it->second);
        }
      } else {
        const size_t n = std::min(line.text.size(), static_cast<size_t>(max_len));
        for (size_t i = 0; i < n; ++i)
          e.tokens.push_back(static_cast<int32_t>(static_cast<uint8_t>(line.text[i])) + 1);
      }
      d.examples.push_back(std::move(e));
    }
    return d;
  }

 private:
  bool words_;
};

}  // namespace

RELPOS_REGISTER_DATASET(
    "tsv",
    {.kind = TaskKind::classification,
     .description = "your own labelled text: train.tsv, valid.tsv, test.tsv of label<TAB>text",
     .how_to_get =
         "tsv is your own labelled text: put train.tsv, valid.tsv and test.tsv in DIR, one\n"
         "  example per line as label<TAB>text with labels 0, 1, 2, ... (at least two classes;\n"
         "  valid and test use the classes of train); data.tokens: bytes (default) or words.",
     .make = make_source<TsvSource>,
     .prepare = nullptr});

}  // namespace relpos
