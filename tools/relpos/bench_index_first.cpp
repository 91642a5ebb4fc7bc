// `relpos bench index-first`: the first block's attention of a byte-level classifier computed the
// standard way (embedding lookup, q/k/v projections of every token, Q·Kᵀ) and index-first
// (ISDPA, seed 001: the projections of the vocabulary table once, the scores as four gathered
// terms): forward + backward time and peak memory at each length, and their ratio.
#include <omp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "autograd/functions.h"
#include "core/error.h"
#include "layers/attention/multi_head.h"
#include "layers/positional/absolute.h"
#include "tools/bench/bench_common.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

constexpr const char* kFooter =
    "Times one softmax attention layer over token ids in [1, V) plus sinusoidal positions,\n"
    "forward + backward (gradients of the table and the projections), computed the standard way\n"
    "and index-first (model.index_first), and prints both with the index-first / standard time.\n"
    "Defaults: V 257 (bytes + padding, LRA Text/Retrieval), lengths 1024,2048,4096, B 8, H 4,\n"
    "D 256 (LRA Text), 1 s per timing.";

// The command line, numbers as given.
struct IndexFirstArgs {
  std::string vocab = "257", batch = "8", heads = "4", dim = "256", min_time = "1",
              lengths = "1024,2048,4096";
};

struct Measured {
  bench::Timing time;
  int64_t peak_bytes = 0;
};

template <typename Call>
Measured measure(const Call& call, double min_seconds) {
  Measured m;
  m.peak_bytes = bench::peak_bytes_of([&] { call(); }, Device::cpu());
  m.time = bench::time_call(call, Device::cpu(), min_seconds, 3);
  return m;
}

int bench_index_first(const IndexFirstArgs& a) {
  const auto positive = [](const char* flag, const std::string& text) {
    return parse_positive<int64_t>("bench", flag, text);
  };
  const int64_t vocab = positive("--vocab", a.vocab), batch = positive("--batch", a.batch),
                heads = positive("--heads", a.heads), dim = positive("--dim", a.dim);
  const double min_seconds = parse_min_time(a.min_time);
  RELPOS_CHECK(vocab >= 2, "bench",
               "--vocab must be at least 2 (ids are drawn from [1, V), 0 "
               "being padding), got '{}'",
               a.vocab);
  RELPOS_CHECK(dim % heads == 0, "bench", "--dim {} is not a multiple of --heads {}", dim, heads);
  std::vector<int64_t> lengths;
  for (const std::string& n : bench::split_list(a.lengths, "--lengths"))
    lengths.push_back(positive("--lengths", n));
  std::printf(
      "index-first vs standard first attention, CPU, %d threads: V %lld, B %lld, H %lld, "
      "D %lld, f32\n%7s %12s %12s %8s %12s %12s\n",
      omp_get_max_threads(), static_cast<long long>(vocab), static_cast<long long>(batch),
      static_cast<long long>(heads), static_cast<long long>(dim), "N", "standard ms", "index ms",
      "ratio", "standard MB", "index MB");
  Generator gen(0);
  for (const int64_t n : lengths) {
    try {
      MultiHeadAttentionConfig c;
      c.model_dim = dim;
      c.num_heads = heads;
      c.max_len = n;
      c.gen = &gen;
      MultiHeadAttention layer(c);
      const Var table(randn({vocab, dim}, gen), true);                     // [V, D]
      const Var positions(SinusoidalPositionalEmbedding(n, dim).table());  // [N, D]
      const Tensor ids = cast(rand({batch, n}, gen, 1, static_cast<double>(vocab), DType::f64),
                              DType::i64);  // [B, N] in [1, V)
      const auto standard = [&] {
        const Var x = embedding(table, ids) + positions;  // [B, N, D]
        const Var y = layer.forward(x);
        sum(y).backward();
        return y.value();
      };
      const auto indexed = [&] {
        const Var y = layer.forward_index_first(ids, table, positions, Tensor(), false);
        sum(y).backward();
        return y.value();
      };
      const Measured s = measure(standard, min_seconds), x = measure(indexed, min_seconds);
      std::printf("%7lld %12.1f %12.1f %8.2f %12.1f %12.1f\n", static_cast<long long>(n),
                  s.time.median_ms, x.time.median_ms, x.time.median_ms / s.time.median_ms,
                  static_cast<double>(s.peak_bytes) / (1 << 20),
                  static_cast<double>(x.peak_bytes) / (1 << 20));
      std::fflush(stdout);
    } catch (const OutOfMemory& e) {
      fail("bench", "V {}, B {}, N {}, D {} do not fit in memory: {}", vocab, batch, n, dim,
           e.what());
    }
  }
  return 0;
}

}  // namespace

void add_bench_index_first(Command bench, int& status) {
  auto a = std::make_shared<IndexFirstArgs>();
  Command sub = bench.add_subcommand(
      "index-first", "ISDPA (model.index_first) against the standard first attention layer.");
  sub.footer(kFooter);
  sub.add_option("--vocab", a->vocab, "vocabulary size V").type_name("V");
  sub.add_option("--lengths", a->lengths, "sequence lengths").type_name("1024,2048,...");
  sub.add_option("--batch", a->batch, "batch size").type_name("B");
  sub.add_option("--heads", a->heads, "heads").type_name("H");
  sub.add_option("--dim", a->dim, "model dimension").type_name("D");
  sub.add_option("--min-time", a->min_time, "seconds per timing").type_name("S");
  sub.callback([a, &status] { status = bench_index_first(*a); });
}

}  // namespace relpos::cli
