// DataLoader: one epoch of a Dataset as padded batches (datasets/collate.h), in order or in a
// seeded Philox permutation that depends only on (seed, epoch), optionally assembled ahead of
// use on one background thread. The Dataset must outlive the loader.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/options.h"
#include "datasets/collate.h"
#include "datasets/dataset.h"
#include "datasets/shard.h"

namespace relpos {

struct DataLoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = false;
  uint64_t seed = 0;       // with shuffle: the order of epoch e is shuffle_order(n, seed, e)
  bool drop_last = false;  // drop the last batch when it has fewer than batch_size examples
  int64_t prefetch = 0;    // batches assembled ahead on one background thread; 0 = inline
  // Data parallel (datasets/shard.h): every batch holds only rank `shard`'s rows of the batch of
  // batch_size (shards = the ranks); the order, the batches and their count stay the job's.
  int64_t shard = 0, shards = 1;
  CollateOptions collate;  // padding, truncation, CLS / SEP, index dtype
};

// Reads batch_size, shuffle, seed, drop_last, prefetch, pad_to ("batch" or a length), pad_id,
// cls_id, sep_id and index_dtype ("i32" / "i64") from `options`; absent keys keep the defaults.
DataLoaderOptions data_loader_options(const Options& options);

// A permutation of 0 .. n-1 (Fisher-Yates driven by Philox 4x32-10 with key `seed` and the epoch
// in the upper counter words): the same on every machine for the same (n, seed, epoch).
std::vector<int64_t> shuffle_order(int64_t n, uint64_t seed, int64_t epoch);

class DataLoader {
 public:
  DataLoader(const Dataset& dataset, DataLoaderOptions options);
  ~DataLoader();  // stops and joins the prefetch thread
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts epoch `epoch` (stopping an unfinished one). Usage:
  //   loader.begin_epoch(e); for (Batch b; loader.next(b);) { ... }
  void begin_epoch(int64_t epoch);
  // The next batch of the epoch into `batch`; false when the epoch is over. An exception raised
  // while assembling a batch (also on the prefetch thread) is rethrown here.
  bool next(Batch& batch);

  int64_t num_batches() const;  // per epoch
  bool retrieval() const { return retrieval_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  Batch make_batch(int64_t index) const;
  void stop_worker();
  void worker_loop();

  const Dataset& dataset_;
  DataLoaderOptions options_;
  bool retrieval_ = false;      // some example carries a second document
  std::vector<int64_t> order_;  // this epoch's example order
  int64_t next_batch_ = 0;      // the next batch next() hands out
  bool started_ = false;

  // Prefetch: the worker assembles batches in order and queues at most options_.prefetch.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  std::exception_ptr failure_;  // set by the worker; rethrown by next()
  bool stop_ = false;
};

}  // namespace relpos
