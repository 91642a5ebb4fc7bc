// `relpos data prepare listops`: generates ListOps (datasets/listops_generator.h) and writes
// LRA's files basic_{train,val,test}.tsv (header `Source\tTarget`, lines ending in "\n").
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "datasets/listops_generator.h"
#include "datasets/prepare.h"
#include "datasets/read_error.h"

namespace relpos {

namespace {

// The TSV bytes of trees [begin, end), written in place (the train split is ~600 MB).
std::vector<uint8_t> tsv_bytes(const std::vector<ListOpsTree>& trees, size_t begin, size_t end) {
  const std::string header = "Source\tTarget\n";
  size_t total = header.size();
  for (size_t i = begin; i < end; ++i) total += trees[i].source.size() + 3;  // "\t" digit "\n"
  std::vector<uint8_t> bytes(total);
  uint8_t* at = bytes.data();
  const auto put = [&at](const char* data, size_t n) {
    std::memcpy(at, data, n);
    at += n;
  };
  put(header.data(), header.size());
  for (size_t i = begin; i < end; ++i) {
    put(trees[i].source.data(), trees[i].source.size());
    const char tail[3] = {'\t', static_cast<char>('0' + trees[i].label), '\n'};
    put(tail, 3);
  }
  return bytes;
}

}  // namespace

// Options: train, val, test (split sizes; default 96000 / 2000 / 2000), seed (default 0),
// min_length, max_length, max_depth, max_args (ListOpsGeneratorConfig). The three splits are cut
// in that order from one de-duplicated stream, so they are disjoint.
std::string prepare_listops(const PrepareRequest& request) {
  const Options& o = request.options;
  const int64_t sizes[3] = {o.get<int64_t>("train", 96000), o.get<int64_t>("val", 2000),
                            o.get<int64_t>("test", 2000)};
  const int64_t seed = o.get<int64_t>("seed", 0);
  ListOpsGeneratorConfig config;
  config.min_length = o.get<int64_t>("min_length", config.min_length);
  config.max_length = o.get<int64_t>("max_length", config.max_length);
  config.max_depth = o.get<int>("max_depth", config.max_depth);
  config.max_args = o.get<int>("max_args", config.max_args);
  o.check_all_used();
  for (const int64_t size : sizes)  // (and their sum an int64)
    RELPOS_CHECK(size >= 0 && size <= std::numeric_limits<int64_t>::max() / 3, "data prepare",
                 "listops split sizes must be in [0, 2^63 / 3), got {}", size);
  RELPOS_CHECK(seed >= 0, "data prepare", "listops seed must be >= 0, got {}", seed);

  check_directories_can_be_made("data prepare", request.out_dir);  // before the trees are drawn
  const std::vector<ListOpsTree> trees =
      generate_listops(static_cast<uint64_t>(seed), sizes[0] + sizes[1] + sizes[2], config);
  make_directories("data prepare", request.out_dir);
  const char* names[3] = {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"};
  size_t begin = 0;
  for (int split = 0; split < 3; ++split) {
    const size_t end = begin + static_cast<size_t>(sizes[split]);
    write_file_atomic((std::filesystem::path(request.out_dir) / names[split]).string(),
                      tsv_bytes(trees, begin, end));
    begin = end;
  }
  double total_length = 0;
  for (const ListOpsTree& tree : trees) total_length += static_cast<double>(tree.length);
  const double mean = trees.empty() ? 0.0 : total_length / static_cast<double>(trees.size());
  return fmt::format(
      "listops: wrote {} / {} / {} distinct trees (seed {}, mean length {:.1f}) to "
      "{}/basic_{{train,val,test}}.tsv",
      sizes[0], sizes[1], sizes[2], seed, mean, request.out_dir);
}

}  // namespace relpos
