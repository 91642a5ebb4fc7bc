// AAN citation pairs for LRA Retrieval (EXPERIMENTS.md "Retrieval"): new_aan_pairs.{train,eval,
// test}.tsv, no header, no quoting, columns `label, id1, id2, text1, text2`.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.h"

namespace relpos {

// Longest line accepted; a longer one is an error (a broken file, not a paper pair).
inline constexpr int64_t kAanMaxLineBytes = int64_t{1} << 20;
// LRA keeps the first 10,000 bytes of each text before truncating to max_len.
inline constexpr int64_t kAanTextBytes = 10000;

// One TSV file, plain or gzip. tokens = text1, tokens2 = text2, byte-level ids (byte + 1, vocab
// 257, 0 = pad); label written as an integer or a float ("1.0") that must be exactly 0 or 1. Errors
// name the line: wrong column count, label not a number or not 0/1, a line over kAanMaxLineBytes,
// an empty file. An empty text is kept (as an empty sequence); a final line without '\n' and CRLF
// line ends are fine.
Dataset read_aan(const std::string& path, int64_t max_len = 4000);

}  // namespace relpos
