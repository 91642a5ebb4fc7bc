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

// LRA's split sizes.
constexpr const char* kSplits[3] = {"train", "val", "test"};
constexpr int64_t kDefaultSizes[3] = {96000, 2000, 2000};

}  // namespace

std::string listops_prepare_options() {
  const ListOpsGeneratorConfig config;
  return fmt::format(
      "--train {} --val {} --test {} trees, --seed 0,\n  --min-length {} --max-length {} "
      "(a tree's length in tokens lies strictly between),\n  --max-depth {}, --max-args {}",
      kDefaultSizes[0], kDefaultSizes[1], kDefaultSizes[2], config.min_length, config.max_length,
      config.max_depth, config.max_args);
}

// Options: train, val, test (split sizes), seed, min_length, max_length, max_depth, max_args
// (ListOpsGeneratorConfig). The three splits are cut in that order from one de-duplicated
// stream, so they are disjoint.
std::string prepare_listops(const PrepareRequest& request) {
  const Options& o = request.options;
  int64_t sizes[3];
  for (int split = 0; split < 3; ++split)
    sizes[split] = o.get<int64_t>(kSplits[split], kDefaultSizes[split]);
  const int64_t seed = o.get<int64_t>("seed", 0);
  ListOpsGeneratorConfig config;
  config.min_length = o.get<int64_t>("min_length", config.min_length);
  config.max_length = o.get<int64_t>("max_length", config.max_length);
  config.max_depth = o.get<int>("max_depth", config.max_depth);
  config.max_args = o.get<int>("max_args", config.max_args);
  o.check_all_used();
  // At least one tree each: the reader refuses a split with none (datasets/listops.cpp).
  for (int split = 0; split < 3; ++split)  // (and their sum an int64)
    RELPOS_CHECK(sizes[split] >= 1 && sizes[split] <= std::numeric_limits<int64_t>::max() / 3,
                 "data prepare", "listops --{} must be in [1, 2^63 / 3), got {}", kSplits[split],
                 sizes[split]);
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
