// DataLoader: every example once per epoch, masks that match the lengths, seeded orders that
// repeat per (seed, epoch), prefetch that changes nothing, CLS / SEP and truncation, retrieval
// pairs, and errors from the prefetch thread reaching the caller.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "datasets/data_loader.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;

namespace {

// Example i has label i (num_classes 0: unchecked) and tokens 10 i + 1 .. 10 i + (i % 5 + 1).
Dataset numbered(int64_t n, bool retrieval = false) {
  Dataset dataset;
  dataset.name = "numbered";
  dataset.vocab_size = 10 * n + 10;
  for (int64_t i = 0; i < n; ++i) {
    Example example;
    example.label = i;
    for (int64_t j = 1; j <= i % 5 + 1; ++j)
      example.tokens.push_back(static_cast<int32_t>(10 * i + j));
    if (retrieval)
      for (int64_t j = 1; j <= i % 3 + 2; ++j) example.tokens2.push_back(static_cast<int32_t>(j));
    dataset.examples.push_back(example);
  }
  return dataset;
}

// The labels of one epoch, checking each row's tokens and mask against its example.
std::vector<int64_t> epoch_labels(DataLoader& loader, const Dataset& dataset, int64_t epoch) {
  std::vector<int64_t> labels;
  loader.begin_epoch(epoch);
  for (Batch batch; loader.next(batch);) {
    const int64_t length = batch.tokens.size(1);
    const auto tokens = batch.tokens.to_vector<int64_t>();
    const auto mask = batch.key_mask.to_vector<int64_t>();
    const auto batch_labels = batch.labels.to_vector<int64_t>();
    CHECK(batch.key_mask.dtype() == DType::u8);
    CHECK(batch.size == static_cast<int64_t>(batch_labels.size()));
    for (int64_t b = 0; b < batch.size; ++b) {
      const auto& expected = dataset.examples[static_cast<size_t>(batch_labels[b])].tokens;
      for (int64_t t = 0; t < length; ++t) {
        const bool real = t < static_cast<int64_t>(expected.size());
        CHECK(mask[b * length + t] == (real ? 1 : 0));
        CHECK(tokens[b * length + t] == (real ? expected[static_cast<size_t>(t)] : 0));
      }
    }
    labels.insert(labels.end(), batch_labels.begin(), batch_labels.end());
  }
  return labels;
}

std::vector<std::vector<int64_t>> epoch_contents(DataLoader& loader, int64_t epoch) {
  std::vector<std::vector<int64_t>> out;
  loader.begin_epoch(epoch);
  for (Batch batch; loader.next(batch);) {
    out.push_back(batch.tokens.to_vector<int64_t>());
    out.push_back(batch.key_mask.to_vector<int64_t>());
    out.push_back(batch.labels.to_vector<int64_t>());
  }
  return out;
}

}  // namespace

TEST_CASE("data_loader: every example exactly once per epoch, any batch size, shuffle, drop_last") {
  for (const int64_t n : {1, 2, 37}) {
    const Dataset dataset = numbered(n);
    for (const int64_t batch_size : {1, 5, 8, 37, 50})
      for (const bool shuffle : {false, true})
        for (const bool drop_last : {false, true})
          for (const int64_t prefetch : {0, 2}) {
            CAPTURE(n);
            CAPTURE(batch_size);
            CAPTURE(shuffle);
            CAPTURE(drop_last);
            DataLoaderOptions options;
            options.batch_size = batch_size;
            options.shuffle = shuffle;
            options.drop_last = drop_last;
            options.prefetch = prefetch;
            options.seed = 11;
            DataLoader loader(dataset, options);
            const std::vector<int64_t> labels = epoch_labels(loader, dataset, 3);
            const int64_t expected = drop_last ? n / batch_size * batch_size : n;
            CHECK(static_cast<int64_t>(labels.size()) == expected);
            CHECK(loader.num_batches() * batch_size >= expected);
            CHECK(std::set<int64_t>(labels.begin(), labels.end()).size() == labels.size());
            if (!shuffle) {
              std::vector<int64_t> in_order(static_cast<size_t>(expected));
              std::iota(in_order.begin(), in_order.end(), int64_t{0});
              CHECK(labels == in_order);
            }
          }
  }
}

TEST_CASE("data_loader: a batch size up to the largest int64 is one batch of every example") {
  // n + batch_size - 1 overflowed to no batch at all: "the training loader ran dry".
  const Dataset dataset = numbered(37);
  for (const bool drop_last : {false, true}) {
    CAPTURE(drop_last);
    DataLoaderOptions options;
    options.batch_size = std::numeric_limits<int64_t>::max();
    options.drop_last = drop_last;
    DataLoader loader(dataset, options);
    CHECK(loader.num_batches() == (drop_last ? 0 : 1));
    CHECK(epoch_labels(loader, dataset, 0).size() == (drop_last ? 0U : 37U));
  }
}

TEST_CASE("data_loader: same seed gives the same order; other epochs and seeds differ") {
  const std::vector<int64_t> a = shuffle_order(100, 7, 0);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(100);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  CHECK(sorted == identity);
  CHECK(a == shuffle_order(100, 7, 0));
  CHECK(a != shuffle_order(100, 7, 1));
  CHECK(a != shuffle_order(100, 8, 0));
  CHECK(a != identity);
  // Philox fixes the bits, so this order is the same on every machine and compiler.
  CHECK(shuffle_order(8, 1234, 0) == std::vector<int64_t>{4, 0, 6, 3, 1, 5, 7, 2});

  const Dataset dataset = numbered(23);
  DataLoaderOptions options;
  options.batch_size = 4;
  options.shuffle = true;
  options.seed = 5;
  DataLoader first(dataset, options), second(dataset, options);
  CHECK(epoch_labels(first, dataset, 2) == epoch_labels(second, dataset, 2));
  CHECK(epoch_labels(first, dataset, 2) != epoch_labels(first, dataset, 3));
}

TEST_CASE("data_loader: prefetch does not change the order or the contents") {
  const Dataset dataset = numbered(41);
  DataLoaderOptions options;
  options.batch_size = 6;
  options.shuffle = true;
  options.seed = 99;
  options.collate.cls_id = 500;
  DataLoader inline_loader(dataset, options);
  for (const int64_t prefetch : {1, 3, 20}) {
    options.prefetch = prefetch;
    DataLoader prefetching(dataset, options);
    for (const int64_t epoch : {0, 1})
      CHECK(epoch_contents(prefetching, epoch) == epoch_contents(inline_loader, epoch));
  }
}

TEST_CASE("data_loader: CLS first, SEP last, padding after; a fixed length drops the tail") {
  Dataset dataset;
  dataset.examples = {{{1, 2, 3}, {}, 0}, {{4, 5, 6, 7, 8, 9}, {}, 1}};
  DataLoaderOptions options;
  options.batch_size = 2;
  options.collate.cls_id = 100;
  options.collate.sep_id = 101;
  options.collate.pad_id = 77;
  options.collate.index_dtype = DType::i32;
  {
    DataLoader loader(dataset, options);  // pad to the batch: L = 6 + 2
    loader.begin_epoch(0);
    Batch batch;
    REQUIRE(loader.next(batch));
    CHECK(batch.tokens.dtype() == DType::i32);
    CHECK(batch.tokens.shape() == Shape{2, 8});
    CHECK(batch.tokens.to_vector<int32_t>() ==
          std::vector<int32_t>{100, 1, 2, 3, 101, 77, 77, 77, 100, 4, 5, 6, 7, 8, 9, 101});
    CHECK(batch.key_mask.to_vector<int32_t>() ==
          std::vector<int32_t>{1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1});
    CHECK(!loader.next(batch));
  }
  options.collate.pad_to = 5;  // room for 3 tokens between CLS and SEP
  options.collate.index_dtype = DType::i64;
  DataLoader loader(dataset, options);
  loader.begin_epoch(0);
  Batch batch;
  REQUIRE(loader.next(batch));
  CHECK(batch.tokens.dtype() == DType::i64);
  CHECK(batch.tokens.to_vector<int64_t>() ==
        std::vector<int64_t>{100, 1, 2, 3, 101, 100, 4, 5, 6, 101});
  CHECK(batch.key_mask.to_vector<int32_t>() == std::vector<int32_t>(10, 1));
  CHECK(batch.labels.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
}

TEST_CASE("data_loader: retrieval pairs fill tokens2 and key_mask2; single documents do not") {
  const Dataset pairs = numbered(7, true);
  DataLoaderOptions options;
  options.batch_size = 3;
  DataLoader loader(pairs, options);
  CHECK(loader.retrieval());
  loader.begin_epoch(0);
  Batch batch;
  REQUIRE(loader.next(batch));  // second documents have lengths 2, 3, 4
  CHECK(batch.tokens2.shape() == Shape{3, 4});
  CHECK(batch.tokens2.to_vector<int64_t>() ==
        std::vector<int64_t>{1, 2, 0, 0, 1, 2, 3, 0, 1, 2, 3, 4});
  CHECK(batch.key_mask2.to_vector<int64_t>() ==
        std::vector<int64_t>{1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1});
  CHECK(batch.tokens.shape() == Shape{3, 3});

  const Dataset single = numbered(7);
  DataLoader plain(single, options);
  plain.begin_epoch(0);
  REQUIRE(plain.next(batch));
  CHECK(!batch.tokens2.defined());
  CHECK(!batch.key_mask2.defined());
}

TEST_CASE("data_loader: a failure on the prefetch thread reaches next(); early stops join") {
  Dataset dataset = numbered(20);
  dataset.name = "bad";
  dataset.num_classes = 20;
  dataset.examples[10].label = 25;
  DataLoaderOptions options;
  options.batch_size = 4;
  options.prefetch = 2;
  DataLoader loader(dataset, options);
  loader.begin_epoch(0);
  Batch batch;
  CHECK(loader.next(batch));  // batches 0 and 1 are fine; batch 2 holds example 10
  CHECK(loader.next(batch));
  CHECK(error_of([&] { loader.next(batch); }) ==
        "[data_loader] bad: example 10 has label 25, expected 0 .. 19");
  loader.begin_epoch(1);  // restarting after a failure, and leaving an epoch unfinished
  CHECK(loader.next(batch));

  DataLoader unused(dataset, options);
  CHECK(error_of([&] { unused.next(batch); }) == "[data_loader] next() before begin_epoch()");
  unused.begin_epoch(0);  // destroyed with a full queue and a waiting worker
}

TEST_CASE("data_loader: invalid options are refused by name; options read from a mapping") {
  const Dataset dataset = numbered(5);
  DataLoaderOptions options;
  options.batch_size = 0;
  CHECK(error_of([&] { DataLoader(dataset, options); }) ==
        "[data_loader] batch_size must be >= 1, got 0");
  options.batch_size = 2;
  options.collate.cls_id = 50;
  options.collate.sep_id = 51;
  options.collate.pad_to = 2;
  CHECK(error_of([&] { DataLoader(dataset, options); }) ==
        "[data_loader] pad_to 2 leaves no room for a token beside CLS/SEP");

  Options mapping("data");
  mapping.set("batch_size", 16).set("shuffle", "true").set("pad_to", 2000).set("cls_id", 16);
  mapping.set("index_dtype", "i32").set("prefetch", 2);
  const DataLoaderOptions read = data_loader_options(mapping);
  mapping.check_all_used();
  CHECK(read.batch_size == 16);
  CHECK(read.shuffle);
  CHECK(read.collate.pad_to == 2000);
  CHECK(read.collate.cls_id == 16);
  CHECK(read.collate.sep_id == -1);
  CHECK(read.collate.index_dtype == DType::i32);
  CHECK(read.prefetch == 2);
  CHECK(data_loader_options(Options("data").set("pad_to", "batch")).collate.pad_to == 0);
  CHECK(error_of([] { data_loader_options(Options("data").set("index_dtype", "f32")); }) ==
        "[data] index_dtype must be i32 or i64, got 'f32'");
}

TEST_CASE("data_loader: shards split every batch so each example is read by exactly one rank") {
  // Odd sizes, batches not divisible by the ranks, more ranks than the last batch's rows.
  for (const int64_t n : {1, 13, 29}) {
    for (const int64_t batch_size : {1, 4, 7}) {
      for (const int64_t ranks : {1, 2, 3, 5}) {
        RELPOS_INFO("n {} batch {} ranks {}", n, batch_size, ranks);
        const Dataset dataset = numbered(n);
        DataLoaderOptions options;
        options.batch_size = batch_size;
        options.shuffle = true;
        options.seed = 9;
        options.shards = ranks;
        DataLoaderOptions one_process = options;
        one_process.shards = 1;
        DataLoader whole(dataset, one_process);
        std::vector<std::vector<int64_t>> per_batch(whole.num_batches());
        std::vector<int64_t> seen;
        for (int64_t r = 0; r < ranks; ++r) {
          options.shard = r;
          DataLoader shard(dataset, options);
          CHECK(shard.num_batches() == whole.num_batches());  // every rank steps together
          shard.begin_epoch(2);
          int64_t b = 0;
          for (Batch batch; shard.next(batch); ++b) {
            CHECK(batch.size ==
                  shard_of(std::min(batch_size, n - b * batch_size), r, ranks).size());
            const auto labels = batch.labels.to_vector<int64_t>();
            per_batch[b].insert(per_batch[b].end(), labels.begin(), labels.end());
            seen.insert(seen.end(), labels.begin(), labels.end());
          }
        }
        // Together the shards of batch b are batch b of one process, in rank order.
        whole.begin_epoch(2);
        int64_t b = 0;
        for (Batch batch; whole.next(batch); ++b)
          CHECK(per_batch[b] == batch.labels.to_vector<int64_t>());
        std::sort(seen.begin(), seen.end());
        std::vector<int64_t> all(n);
        std::iota(all.begin(), all.end(), 0);
        CHECK(seen == all);
      }
    }
  }
}
