// Collation of examples into padded [B, L] token tensors with key masks (see collate.h): the
// sequence laid out is [CLS] tokens[0 .. keep) [SEP], keep = what fits in the fixed length.
#include "datasets/collate.h"

#include <algorithm>
#include <vector>

#include "core/dtype_id.h"
#include "core/error.h"

namespace relpos {

namespace {

int64_t specials(const CollateOptions& options) {
  return (options.cls_id >= 0 ? 1 : 0) + (options.sep_id >= 0 ? 1 : 0);
}

// Length of one laid-out sequence before padding: content (truncated to fit) plus specials.
int64_t laid_out_length(const std::vector<int32_t>& tokens, const CollateOptions& options) {
  const int64_t full = static_cast<int64_t>(tokens.size()) + specials(options);
  return options.pad_to > 0 ? std::min(full, options.pad_to) : full;
}

template <typename Index>
void fill(const Dataset& dataset, std::span<const int64_t> indices, const CollateOptions& options,
          bool second, int64_t length, Tensor* tokens_out, Tensor* mask_out) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  *tokens_out = Tensor::empty({batch, length}, dtype_of<Index>());
  *mask_out = Tensor::empty({batch, length}, DType::u8);
  Index* tokens = tokens_out->data<Index>();  // [B, L]
  uint8_t* mask = mask_out->data<uint8_t>();  // [B, L]
  std::fill(tokens, tokens + batch * length, static_cast<Index>(options.pad_id));
  std::fill(mask, mask + batch * length, uint8_t{0});
  for (int64_t b = 0; b < batch; ++b) {
    const Example& example = dataset.examples[static_cast<size_t>(indices[b])];
    const std::vector<int32_t>& source = second ? example.tokens2 : example.tokens;
    const int64_t keep =
        std::min<int64_t>(static_cast<int64_t>(source.size()), length - specials(options));
    Index* row = tokens + b * length;
    int64_t at = 0;
    if (options.cls_id >= 0) row[at++] = static_cast<Index>(options.cls_id);
    std::copy(source.begin(), source.begin() + keep, row + at);
    at += keep;
    if (options.sep_id >= 0) row[at++] = static_cast<Index>(options.sep_id);
    std::fill(mask + b * length, mask + b * length + at, uint8_t{1});
  }
}

void fill_side(const Dataset& dataset, std::span<const int64_t> indices,
               const CollateOptions& options, bool second, Tensor* tokens, Tensor* mask) {
  int64_t length = options.pad_to;
  if (length == 0) {
    length = 1;  // an all-empty batch still has one (masked) column
    for (const int64_t i : indices) {
      const Example& example = dataset.examples[static_cast<size_t>(i)];
      length =
          std::max(length, laid_out_length(second ? example.tokens2 : example.tokens, options));
    }
  }
  if (options.index_dtype == DType::i32)
    fill<int32_t>(dataset, indices, options, second, length, tokens, mask);
  else
    fill<int64_t>(dataset, indices, options, second, length, tokens, mask);
}

}  // namespace

void check_collate_options(const CollateOptions& options) {
  RELPOS_CHECK(options.pad_to >= 0, "data_loader", "pad_to must be >= 0 (0 = batch), got {}",
               options.pad_to);
  RELPOS_CHECK(options.pad_to == 0 || options.pad_to > specials(options), "data_loader",
               "pad_to {} leaves no room for a token beside CLS/SEP", options.pad_to);
  RELPOS_CHECK(options.cls_id >= -1 && options.sep_id >= -1 && options.pad_id >= 0, "data_loader",
               "ids must be >= 0 (cls_id / sep_id: -1 = none), got pad_id {}, "
               "cls_id {}, sep_id {}",
               options.pad_id, options.cls_id, options.sep_id);
  RELPOS_CHECK(options.index_dtype == DType::i32 || options.index_dtype == DType::i64,
               "data_loader", "index dtype must be i32 or i64, got {}",
               dtype_name(options.index_dtype));
}

Batch collate(const Dataset& dataset, std::span<const int64_t> indices,
              const CollateOptions& options, bool retrieval) {
  Batch batch;
  batch.size = static_cast<int64_t>(indices.size());
  fill_side(dataset, indices, options, false, &batch.tokens, &batch.key_mask);
  if (retrieval) fill_side(dataset, indices, options, true, &batch.tokens2, &batch.key_mask2);
  std::vector<int64_t> labels;
  labels.reserve(indices.size());
  for (const int64_t i : indices) {
    const int64_t label = dataset.examples[static_cast<size_t>(i)].label;
    RELPOS_CHECK(dataset.num_classes <= 0 || (label >= 0 && label < dataset.num_classes),
                 "data_loader", "{}: example {} has label {}, expected 0 .. {}", dataset.name, i,
                 label, dataset.num_classes - 1);
    labels.push_back(label);
  }
  batch.labels = Tensor::from_vector(labels, {batch.size});
  return batch;
}

}  // namespace relpos
