// IMDB movie reviews for LRA Text (EXPERIMENTS.md "Text"): aclImdb/{train,test}/{pos,neg}/*.txt,
// byte-level ids (byte + 1, vocab 257, 0 = pad) truncated to max_len; label pos = 1, neg = 0.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.h"

namespace relpos {

// `root` is the folder holding aclImdb/, or aclImdb itself; `split` is "train" or "test" (the
// test split doubles as validation). Examples come neg first, then pos, each folder's files
// sorted by name, so the order is the same on every machine. A missing folder, a folder with
// no *.txt file and an empty review are errors naming the path.
Dataset read_imdb(const std::string& root, const std::string& split, int64_t max_len = 1000);

}  // namespace relpos
