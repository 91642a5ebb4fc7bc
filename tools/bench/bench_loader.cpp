// relpos_bench_loader: examples/s of the DataLoader for ListOps-like sequences (random tokens,
// lengths 500-2000, padded to 2000) and MNIST-like ones (784 tokens), batch 32, with prefetch 0
// (inline) and N (one background thread). --step-us W adds W microseconds of busy work per batch
// on the caller, a stand-in for a training step, so the overlap that prefetch buys is visible.
// Usage: relpos_bench_loader [--epochs N (3)] [--prefetch N (4)] [--step-us W (0)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "datasets/data_loader.h"
#include "tools/bench/bench_common.h"
#include "tools/command_line/command_line.h"

using namespace relpos;
using Clock = std::chrono::steady_clock;

namespace {

volatile int64_t g_sink = 0;  // keeps the batches observably used

Dataset random_dataset(const std::string& name, int64_t n, int64_t min_length, int64_t max_length,
                       int32_t vocab) {
  std::mt19937_64 engine(42);
  Dataset dataset;
  dataset.name = name;
  dataset.vocab_size = vocab;
  dataset.num_classes = 10;
  dataset.examples.resize(static_cast<size_t>(n));
  for (Example& example : dataset.examples) {
    const auto span = static_cast<uint64_t>(max_length - min_length + 1);
    example.tokens.resize(static_cast<size_t>(min_length + static_cast<int64_t>(engine() % span)));
    for (int32_t& token : example.tokens) token = static_cast<int32_t>(engine() % vocab);
    example.label = static_cast<int64_t>(engine() % 10);
  }
  return dataset;
}

void busy_wait(double microseconds) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(microseconds);
  while (Clock::now() < until) {
  }
}

// Best and median examples/s over `epochs` shuffled epochs.
void run(const Dataset& dataset, int64_t pad_to, int64_t prefetch, int64_t epochs, double step_us) {
  DataLoaderOptions options;
  options.batch_size = 32;
  options.shuffle = true;
  options.seed = 1;
  options.prefetch = prefetch;
  options.collate.pad_to = pad_to;
  DataLoader loader(dataset, options);
  std::vector<double> rates;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    const auto start = Clock::now();
    int64_t examples = 0;
    loader.begin_epoch(epoch);
    for (Batch batch; loader.next(batch);) {
      examples += batch.size;
      g_sink = g_sink + batch.tokens.data<int64_t>()[batch.tokens.numel() - 1];
      if (step_us > 0) busy_wait(step_us);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    rates.push_back(static_cast<double>(examples) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("| %-8s | %-5s | %8lld | %11.0f | %11.0f |\n", dataset.name.c_str(),
              pad_to > 0 ? std::to_string(pad_to).c_str() : "batch",
              static_cast<long long>(prefetch), rates.back(), rates[rates.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  cli::Program program("Examples per second of the batch loader, with and without prefetching.",
                       "relpos_bench_loader");
  cli::Command app = program.root();
  int64_t epochs = 3, prefetch = 4;
  double step_us = 0;
  app.add_option("--epochs", epochs, "epochs per measurement")
      .check_positive()
      .capture_default_str();
  app.add_option("--prefetch", prefetch, "batches read ahead")
      .check_positive()
      .capture_default_str();
  app.add_option("--step-us", step_us, "microseconds of busy work per batch (a training step)")
      .check_non_negative()
      .capture_default_str();
  return program.run(argc, argv, [&] {
    const Dataset listops = random_dataset("listops", 4000, 500, 2000, 17);
    const Dataset mnist = random_dataset("mnist", 10000, 784, 784, 256);
    std::printf("batch 32, shuffled, %lld epochs, step %.0f us per batch\n\n",
                static_cast<long long>(epochs), step_us);
    std::printf("| data     | pad   | prefetch | best ex/s   | median ex/s |\n");
    std::printf("|---|---|---|---|---|\n");
    for (const int64_t p : {int64_t{0}, prefetch}) {
      run(listops, 2000, p, epochs, step_us);
      run(mnist, 0, p, epochs, step_us);
    }
    return 0;
  });
}
