// DataLoader (see data_loader.h): the epoch order, batch slicing, and the prefetch thread, a
// bounded queue filled by one std::thread that is stopped and joined by begin_epoch and the
// destructor; a failure on that thread travels to next() as an exception_ptr.
#include "datasets/data_loader.h"

#include <algorithm>
#include <numeric>
#include <span>

#include "core/error.h"
#include "core/philox.h"

namespace relpos {

DataLoaderOptions data_loader_options(const Options& options) {
  DataLoaderOptions out;
  out.batch_size = options.get<int64_t>("batch_size", out.batch_size);
  out.shuffle = options.get<bool>("shuffle", out.shuffle);
  out.seed = static_cast<uint64_t>(options.get<int64_t>("seed", 0));
  out.drop_last = options.get<bool>("drop_last", out.drop_last);
  out.prefetch = options.get<int64_t>("prefetch", out.prefetch);
  const std::string pad_to = options.get<std::string>("pad_to", "batch");
  out.collate.pad_to = pad_to == "batch" ? 0 : options.get<int64_t>("pad_to", 0);
  out.collate.pad_id = options.get<int64_t>("pad_id", out.collate.pad_id);
  out.collate.cls_id = options.get<int64_t>("cls_id", out.collate.cls_id);
  out.collate.sep_id = options.get<int64_t>("sep_id", out.collate.sep_id);
  const std::string dtype = options.get<std::string>("index_dtype", "i64");
  RELPOS_CHECK(dtype == "i32" || dtype == "i64", options.where(),
               "index_dtype must be i32 or i64, got '{}'", dtype);
  out.collate.index_dtype = dtype == "i32" ? DType::i32 : DType::i64;
  return out;
}

std::vector<int64_t> shuffle_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto e = static_cast<uint64_t>(epoch);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto c = static_cast<uint64_t>(i);
    const philox::Block r = philox::philox4x32_10(
        philox::Block{{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32),
                       static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32)}},
        seed);
    // 64 random bits modulo i + 1: the bias is below 2^-40 for any realistic n.
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(bits % (c + 1))]);
  }
  return order;
}

DataLoader::DataLoader(const Dataset& dataset, DataLoaderOptions options)
    : dataset_(dataset), options_(options) {
  RELPOS_CHECK(options_.batch_size >= 1, "data_loader", "batch_size must be >= 1, got {}",
               options_.batch_size);
  RELPOS_CHECK(options_.prefetch >= 0, "data_loader", "prefetch must be >= 0, got {}",
               options_.prefetch);
  check_collate_options(options_.collate);
  retrieval_ = std::any_of(dataset_.examples.begin(), dataset_.examples.end(),
                           [](const Example& e) { return !e.tokens2.empty(); });
}

DataLoader::~DataLoader() {
  stop_worker();
}

int64_t DataLoader::num_batches() const {
  const auto n = static_cast<int64_t>(dataset_.examples.size());
  const int64_t whole = n / options_.batch_size;  // no n + batch_size - 1: it may overflow
  return options_.drop_last || n % options_.batch_size == 0 ? whole : whole + 1;
}

Batch DataLoader::make_batch(int64_t index) const {
  const int64_t start = index * options_.batch_size;
  const int64_t end = std::min(start + options_.batch_size, static_cast<int64_t>(order_.size()));
  const Shard mine = shard_of(end - start, options_.shard, options_.shards);
  return collate(dataset_,
                 std::span<const int64_t>(order_.data() + start + mine.begin,
                                          static_cast<size_t>(mine.size())),
                 options_.collate, retrieval_);
}

void DataLoader::begin_epoch(int64_t epoch) {
  stop_worker();
  const auto n = static_cast<int64_t>(dataset_.examples.size());
  if (options_.shuffle) {
    order_ = shuffle_order(n, options_.seed, epoch);
  } else {
    order_.resize(static_cast<size_t>(n));
    std::iota(order_.begin(), order_.end(), int64_t{0});
  }
  next_batch_ = 0;
  started_ = true;
  ready_.clear();
  failure_ = nullptr;
  stop_ = false;
  if (options_.prefetch > 0 && num_batches() > 0) worker_ = std::thread([this] { worker_loop(); });
}

void DataLoader::worker_loop() {
  const int64_t total = num_batches();
  for (int64_t b = 0; b < total; ++b) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] {
        return stop_ || static_cast<int64_t>(ready_.size()) < options_.prefetch;
      });
      if (stop_) return;
    }
    try {
      Batch batch = make_batch(b);
      const std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(batch));
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      failure_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    changed_.notify_all();
  }
}

void DataLoader::stop_worker() {
  if (!worker_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

bool DataLoader::next(Batch& batch) {
  RELPOS_CHECK(started_, "data_loader", "next() before begin_epoch()");
  if (next_batch_ >= num_batches()) return false;
  if (options_.prefetch == 0) {
    batch = make_batch(next_batch_);
    ++next_batch_;
    return true;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !ready_.empty() || failure_ != nullptr; });
  if (ready_.empty()) std::rethrow_exception(failure_);
  batch = std::move(ready_.front());
  ready_.pop_front();
  ++next_batch_;
  lock.unlock();
  changed_.notify_all();
  return true;
}

}  // namespace relpos
