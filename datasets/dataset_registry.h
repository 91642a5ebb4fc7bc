// The dataset registry (DESIGN §5, §13): every dataset a config can name (`data.dataset`) registers
// itself from its own file, datasets/*_dataset.cpp, with one RELPOS_REGISTER_DATASET line: its task
// kind, a one-line description, how to get its files, its `relpos data prepare` (where it can be
// made here), and a factory that reads its own `data:` keys into a DatasetSource, which reads its
// splits. `relpos data prepare`, `relpos list`, config validation and the tasks enumerate it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/options.h"
#include "core/task_kind.h"
#include "datasets/char_corpus.h"
#include "datasets/dataset.h"
#include "datasets/prepare.h"

namespace relpos {

// Where a dataset's files are: data.dir, and the dataset's name for its errors.
struct DataFolder {
  std::string dataset;
  std::string dir;

  // dir/name: missing(name) when there is nothing there; a folder or a device there is refused
  // naming it (check_data_file), and so is a link that leads to no file (a missing target or a
  // loop).
  std::string file(const std::string& name) const;
  // An error naming dir/name when it is a link that leads to no file (a missing target or a
  // loop): the readers that look for their files on their own call it before missing().
  void refuse_broken_link(const std::string& name) const;
  // Throws "[data] `what` not found in 'dir': " + how_to_get().
  [[noreturn]] void missing(const std::string& what) const;
  // The dataset's how_to_get on one line, DIR replaced by dir, and "(or point data.dir elsewhere
  // with --set data.dir=...)".
  std::string how_to_get() const;
};

// One configured dataset: built by its entry's factory from its own `data:` keys, it reads them
// once (checking their values) and then reads splits from a folder.
class DatasetSource {
 public:
  virtual ~DatasetSource() = default;
  // Content tokens per sequence (per document for pairs) when data.max_len is 0; 0 for a stream.
  virtual int64_t default_length() const { return 0; }
  // Whether every example has exactly default_length() tokens (an image), so that data.max_len
  // cannot cut or pad it.
  virtual bool fixed_length() const { return false; }
  // Whether each example is a pair of documents (tokens and tokens2).
  virtual bool pairs() const { return false; }
  // Classification: split "train", "val" or "test", every sequence cut to `max_len` tokens.
  virtual Dataset read_split(const DataFolder& folder, const std::string& split,
                             int64_t max_len) const;
  // Language modelling: the train, valid and test streams.
  virtual CharCorpus read_corpus(const DataFolder& folder) const;
};

struct DatasetEntry {
  TaskKind kind = TaskKind::classification;
  std::string description;  // one line, for --help, `relpos list` and errors
  // Where the files come from and the layout read, DIR standing for data.dir (several lines):
  // printed by `relpos data prepare NAME` when there is no preparer, and by "not found" errors.
  std::string how_to_get;
  // Reads and checks the dataset's own `data:` keys (the ones not common to every dataset).
  std::function<std::unique_ptr<DatasetSource>(const Options& own)> make;
  Preparer prepare;  // `relpos data prepare NAME`; nullptr where the files cannot be made here
};

// A factory for DatasetEntry::make: `Source(own)` reads its keys in its constructor.
template <typename Source>
std::unique_ptr<DatasetSource> make_source(const Options& own) {
  return std::make_unique<Source>(own);
}

class DatasetRegistry {
 public:
  // Returns true so a registration can initialize a namespace-scope constant.
  bool add(const std::string& name, DatasetEntry entry);
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // The entry of `name`; an unknown name fails as "[who] unknown dataset 'x'; known: a, b, ...".
  const DatasetEntry& at(const std::string& name, const std::string& who = "data") const;
  std::vector<std::string> names() const;  // sorted

 private:
  std::map<std::string, DatasetEntry> entries_;
};

DatasetRegistry& dataset_registry();

// The source of dataset `name` built from its own keys `own` (unknown names fail listing all).
std::unique_ptr<DatasetSource> make_dataset_source(const std::string& name, const Options& own);

// Every registered name, comma-separated, for messages.
std::string dataset_names();

}  // namespace relpos

#define RELPOS_DATASET_CONCAT_(a, b) a##b
#define RELPOS_DATASET_CONCAT(a, b) RELPOS_DATASET_CONCAT_(a, b)
// RELPOS_REGISTER_DATASET("name", {.kind = ..., .description = ..., ...}); in the dataset's file.
#define RELPOS_REGISTER_DATASET(name, ...)                                              \
  [[maybe_unused]] static const bool RELPOS_DATASET_CONCAT(relpos_dataset_, __LINE__) = \
      ::relpos::dataset_registry().add(name, ::relpos::DatasetEntry __VA_ARGS__)
