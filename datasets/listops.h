// ListOps (LRA): tokenizers and the reader of the release TSVs `basic_{train,val,test}.tsv`
// (header `Source\tTarget`, target 0-9; EXPERIMENTS.md "Data formats and known traps").
// Sources look like `( ( ( [MAX 2 ) 9 ) ] )`; num_classes 10.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/dataset.h"

namespace relpos {

// lra (default, the fixed LRA tokenizer): `]` -> `X`, `(` and `)` dropped, split on whitespace.
//   Vocabulary: 0 pad, 1 [MIN, 2 [MAX, 3 [MED, 4 [SM, 5 X, 6..15 the digits 0..9,
//   16 unknown; vocab_size 17.
// lra_2021 (the tokenizer of the LRA code before its 2021 fix, used by the SPE/FastRPB fork):
//   tfds' default Tokenizer, which splits on every non-alphanumeric character, so `(`, `)`, `[`
//   and `]` all vanish: `[MAX` -> `MAX` and a closing `]` leaves no token at all (the tree shape
//   is lost; see google-research/long-range-arena issues #14 and #20).
//   Vocabulary: 0 pad, 1 MIN, 2 MAX, 3 MED, 4 SM, 5..14 the digits 0..9, 15 unknown;
//   vocab_size 16.
enum class ListOpsTokenizer { lra, lra_2021 };

// "lra" or "lra_2021"; anything else is an error listing both.
ListOpsTokenizer listops_tokenizer_from_name(const std::string& name);
int64_t listops_vocab_size(ListOpsTokenizer tokenizer);
std::vector<int32_t> tokenize_listops(std::string_view source, ListOpsTokenizer tokenizer);

// Longest line the reader accepts (the longest LRA sources are about 10 kB).
inline constexpr int64_t kListOpsMaxLineBytes = int64_t{1} << 20;

// Reads a ListOps TSV (plain or .gz). Lines end in "\n" or "\r\n" (Python's csv writer, which
// wrote the LRA files, uses "\r\n"); the last line may lack its newline. Errors, each with the
// line number: a header other than `Source\tTarget`, a line without a tab, an empty source (or
// one with no tokens), a target that is not an integer 0-9, a line over kListOpsMaxLineBytes,
// and a file with no examples. Tokens are truncated to max_len (no padding: the DataLoader pads).
// The dataset is named "listops/" + the file name without extension(s).
Dataset read_listops(const std::string& path, ListOpsTokenizer tokenizer = ListOpsTokenizer::lra,
                     int64_t max_len = 2000);

}  // namespace relpos
