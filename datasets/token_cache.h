// Optional HDF5 cache of a tokenized Dataset, so a split is tokenized once. The file holds
// `tokens` (all sequences concatenated, i32), `offsets` (i64, examples + 1), `labels` (i64),
// `tokens2` / `offsets2` for retrieval, and attributes vocab_size, num_classes, name,
// format_version and the source's size and mtime, which decide whether the cache is stale.
#pragma once

#include <optional>
#include <string>

#include "datasets/dataset.h"

namespace relpos {

// Writes `dataset` to cache_path (through a temporary file in the same folder and a rename, so a
// reader never sees half a cache), stamped with the size and modification time of source_path
// (a file, or a folder such as aclImdb/train: a folder's size counts as 0, and its mtime changes
// only when entries are added or removed). Data are chunked with Fletcher-32 checksums.
void write_token_cache(const std::string& cache_path, const Dataset& dataset,
                       const std::string& source_path);

// The cached Dataset, or std::nullopt when the cache is missing, the source is missing, or the
// source's size or mtime differ from the stamp (the source changed: re-tokenize and rewrite).
// A cache file that exists but is corrupt or truncated (not HDF5, a missing or inconsistent
// dataset, a checksum mismatch) is an ERROR naming the file, never silently rebuilt, since
// writes are atomic and such a file means something else is wrong; delete it to rebuild.
std::optional<Dataset> load_cached(const std::string& cache_path, const std::string& source_path);

}  // namespace relpos
