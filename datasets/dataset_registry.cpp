// The dataset registry (datasets/dataset_registry.h) and the errors every dataset shares: an
// unknown name, a missing file (which says how to get the dataset).
#include "datasets/dataset_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "core/error.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

// `text` on one line: each line break and the indentation after it become one space, and every
// DIR names `dir`.
std::string one_line(const std::string& text, const std::string& dir) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
      if (i + 1 < text.size()) out += ' ';
    } else if (text.compare(i, 3, "DIR") == 0) {
      out += dir;
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string DataFolder::file(const std::string& name) const {
  const std::filesystem::path path = std::filesystem::path(dir) / name;
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::status(path, error))) {
    refuse_broken_link(name);
    missing(name);
  }
  check_data_file("data", path.string());  // a folder or a device where the file belongs
  return path.string();
}

void DataFolder::refuse_broken_link(const std::string& name) const {
  relpos::refuse_broken_link("data", (std::filesystem::path(dir) / name).string());
}

void DataFolder::missing(const std::string& what) const {
  fail<DataMissing>("data", "{} not found in '{}': {}", what, dir, how_to_get());
}

std::string DataFolder::how_to_get() const {
  return one_line(dataset_registry().at(dataset).how_to_get, dir) +
         " (or point data.dir elsewhere with --set data.dir=...)";
}

Dataset DatasetSource::read_split(const DataFolder& folder, const std::string&, int64_t) const {
  fail("data", "{} is a language-modelling corpus, not labelled sequences", folder.dataset);
}

CharCorpus DatasetSource::read_corpus(const DataFolder& folder) const {
  fail("data", "{} holds labelled sequences, not a language-modelling corpus", folder.dataset);
}

bool DatasetRegistry::add(const std::string& name, DatasetEntry entry) {
  RELPOS_CHECK(!entries_.count(name), "data", "dataset '{}' is registered twice", name);
  RELPOS_CHECK(entry.make && !entry.description.empty() && !entry.how_to_get.empty(), "data",
               "dataset '{}' needs a factory, a description and how to get it", name);
  entries_.emplace(name, std::move(entry));
  return true;
}

const DatasetEntry& DatasetRegistry::at(const std::string& name, const std::string& who) const {
  const auto it = entries_.find(name);
  RELPOS_CHECK(it != entries_.end(), who, "unknown dataset '{}'; known: {}", name,
               fmt::join(names(), ", "));
  return it->second;
}

std::vector<std::string> DatasetRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry.first);
  return out;
}

DatasetRegistry& dataset_registry() {
  static DatasetRegistry registry;
  return registry;
}

std::unique_ptr<DatasetSource> make_dataset_source(const std::string& name, const Options& own) {
  return dataset_registry().at(name).make(own);
}

std::string dataset_names() {
  return fmt::format("{}", fmt::join(dataset_registry().names(), ", "));
}

}  // namespace relpos
