// Collation: a list of examples becomes one padded Batch (tokens [B, L], key mask, labels), with
// an optional CLS id in front and SEP id at the end of every sequence, and truncation to a fixed
// length. Retrieval examples (a second document) fill tokens2 / key_mask2 the same way.
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "datasets/dataset.h"

namespace relpos {

// One batch, on the CPU (the trainer moves it to the device).
struct Batch {
  Tensor tokens;     // [B, L] i32 or i64 (CollateOptions::index_dtype); pad_id after the end
  Tensor key_mask;   // [B, L] u8, 1 = real token (CLS and SEP count as real), 0 = padding
  Tensor labels;     // [B] i64
  Tensor tokens2;    // [B, L2] second documents (retrieval); undefined otherwise
  Tensor key_mask2;  // [B, L2] u8; undefined unless retrieval
  int64_t size = 0;  // B
};

// Special ids follow one convention: an id >= 0 is inserted, -1 means none. A model that adds a
// CLS token usually takes cls_id = vocab_size (a new id) and builds its embedding with
// vocab_size + 1 rows; the collator does not check ids against the vocabulary.
struct CollateOptions {
  // 0: pad to the longest sequence of the batch (at least 1). > 0: every batch has exactly this
  // length; longer sequences are TRUNCATED (their tail is dropped; CLS and SEP are kept).
  int64_t pad_to = 0;
  int64_t pad_id = 0;
  int64_t cls_id = -1;             // prepended to every sequence when >= 0
  int64_t sep_id = -1;             // appended to every sequence when >= 0
  DType index_dtype = DType::i64;  // of tokens / tokens2: i32 or i64
};

// Throws relpos::Error("[data_loader] ...") for pad_to < 0, a fixed length too short to hold
// CLS + SEP + one token, ids below -1, or an index dtype other than i32 / i64.
void check_collate_options(const CollateOptions& options);

// The batch of dataset.examples[indices[0]], dataset.examples[indices[1]], ... in that order.
// `retrieval` fills tokens2 / key_mask2 from Example::tokens2. A label outside
// [0, dataset.num_classes) (when num_classes > 0) is an error naming the dataset and example.
Batch collate(const Dataset& dataset, std::span<const int64_t> indices,
              const CollateOptions& options, bool retrieval);

}  // namespace relpos
