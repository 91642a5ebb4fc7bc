// relpos_bench_ops: times core ops on fixed shapes, on the CPU or a GPU — the same cases, shape
// strings and timing method as bench_ops_torch.py, so run_cpu_bench.sh / run_gpu_bench.sh can put
// relpos and PyTorch side by side. On CUDA each sample ends with a device synchronize.
// Options: relpos_bench_ops --help.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/ops.h"
#include "tools/bench/bench_common.h"
#include "tools/command_line/command_line.h"

using namespace relpos;

namespace {

using Call = std::function<Tensor()>;

struct Case {
  const char* op;                        // --filter selects by this name
  const char* shape;                     // printed; identical in bench_ops_torch.py
  std::function<Call(Generator&)> make;  // builds the inputs (untimed), returns the timed call
};

Device g_device = Device::cpu();  // where the cases run (--device)

Tensor normal(const Shape& shape, Generator& gen) {
  return randn(shape, gen, 0, 1, DType::f32, g_device);
}

// [B, L, H*16] -> the view [B, H, L, 16] (no copy).
Tensor head_view(const Tensor& x) {
  return x.reshape({x.size(0), x.size(1), x.size(2) / 16, 16}).transpose(1, 2);
}

// The activation cases, in f32 and in bf16 storage computed in f32 (the activations of
// train.precision: bf16), and the casts between them.
std::vector<Case> activation_cases() {
  return {
      {"gelu", "[4096, 4096]",
       [](Generator& g) {
         const Tensor x = normal({4096, 4096}, g);
         return Call([=] { return gelu(x); });
       }},
      {"gelu", "[4096, 4096] bf16",
       [](Generator& g) {
         const Tensor x = cast(normal({4096, 4096}, g), DType::bf16);
         return Call([=] { return gelu(x); });
       }},
      {"add", "[4096, 4096] + [4096, 4096] bf16",
       [](Generator& g) {
         const Tensor a = cast(normal({4096, 4096}, g), DType::bf16);
         const Tensor b = cast(normal({4096, 4096}, g), DType::bf16);
         return Call([=] { return add(a, b); });
       }},
      {"cast", "[4096, 4096] f32 to bf16",
       [](Generator& g) {
         const Tensor x = normal({4096, 4096}, g);
         return Call([=] { return cast(x, DType::bf16); });
       }},
      {"cast", "[4096, 4096] bf16 to f32",
       [](Generator& g) {
         const Tensor x = cast(normal({4096, 4096}, g), DType::bf16);
         return Call([=] { return cast(x, DType::f32); });
       }},
  };
}

// Heads split from a [32, 64, 64] projection: rows of 16 elements with strides, the layout of
// q and k in the attention layers.
std::vector<Case> head_view_cases() {
  return {
      {"copy", "[32, 4, 64, 16] head view, contiguous",
       [](Generator& g) {
         const Tensor x = head_view(normal({32, 64, 64}, g));
         return Call([=] { return x.contiguous(); });
       }},
      {"sub", "[32, 4, 64, 16] head view - [32, 4, 64, 1]",
       [](Generator& g) {
         const Tensor x = head_view(normal({32, 64, 64}, g)), c = normal({32, 4, 64, 1}, g);
         return Call([=] { return sub(x, c); });
       }},
      {"add", "[32, 4, 64, 16] head view + [32, 4, 64, 16] head view",
       [](Generator& g) {
         const Tensor a = head_view(normal({32, 64, 64}, g));
         const Tensor b = head_view(normal({32, 64, 64}, g));
         return Call([=] { return add(a, b); });
       }},
  };
}

// One row per case. Inputs are f32 drawn from N(0, 1), contiguous but for the head views
// (rounded to bf16 where the shape says bf16).
const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      {"matmul", "[1024, 1024] x [1024, 1024]",
       [](Generator& g) {
         const Tensor a = normal({1024, 1024}, g), b = normal({1024, 1024}, g);
         return Call([=] { return matmul(a, b); });
       }},
      {"bmm", "[64, 256, 64] x [64, 64, 256]",
       [](Generator& g) {
         const Tensor a = normal({64, 256, 64}, g), b = normal({64, 64, 256}, g);
         return Call([=] { return bmm(a, b); });
       }},
      {"bmm", "[16, 512, 512] x [16, 512, 512]",
       [](Generator& g) {
         const Tensor a = normal({16, 512, 512}, g), b = normal({16, 512, 512}, g);
         return Call([=] { return bmm(a, b); });
       }},
      {"softmax", "[64, 1024, 256], dim -1",
       [](Generator& g) {
         const Tensor x = normal({64, 1024, 256}, g);
         return Call([=] { return softmax(x, -1); });
       }},
      {"layer_norm", "[64, 1024, 256], weight+bias [256]",
       [](Generator& g) {
         const Tensor x = normal({64, 1024, 256}, g), w = normal({256}, g), b = normal({256}, g);
         return Call([=] { return layer_norm(x, w, b, 1e-5).y; });
       }},
      {"rfft", "[64, 8192]",
       [](Generator& g) {
         const Tensor x = normal({64, 8192}, g);
         return Call([=] { return rfft(x); });
       }},
      {"cumsum", "[64, 8192], dim 1",
       [](Generator& g) {
         const Tensor x = normal({64, 8192}, g);
         return Call([=] { return cumsum(x, 1); });
       }},
      {"cumsum", "[64, 1024, 256], dim 1",
       [](Generator& g) {
         const Tensor x = normal({64, 1024, 256}, g);
         return Call([=] { return cumsum(x, 1); });
       }},
      {"copy", "[4096, 4096] clone",  // the bandwidth baseline
       [](Generator& g) {
         const Tensor x = normal({4096, 4096}, g);
         return Call([=] { return x.clone(); });
       }},
      {"add", "[4096, 4096] + [4096, 4096]",
       [](Generator& g) {
         const Tensor a = normal({4096, 4096}, g), b = normal({4096, 4096}, g);
         return Call([=] { return add(a, b); });
       }},
      {"sum", "[4096, 4096], all dims",
       [](Generator& g) {
         const Tensor x = normal({4096, 4096}, g);
         return Call([=] { return sum(x); });
       }},
      {"sum", "[64, 1024, 256], dim -1",
       [](Generator& g) {
         const Tensor x = normal({64, 1024, 256}, g);
         return Call([=] { return sum(x, {-1}); });
       }},
  };
  static const std::vector<Case> all = [] {
    std::vector<Case> t = table;
    for (const std::vector<Case>& more : {head_view_cases(), activation_cases()})
      t.insert(t.end(), more.begin(), more.end());
    return t;
  }();
  return all;
}

// Bytes the allocator held at the peak of one call beyond what was live before it (output plus
// temporaries), and the output's size.
struct Memory {
  int64_t peak_bytes = 0, out_bytes = 0;
};
Memory memory_of(const Call& call) {
  int64_t out_bytes = 0;
  const int64_t peak = bench::peak_bytes_of(
      [&] {
        const Tensor out = call();
        out_bytes = out.numel() * static_cast<int64_t>(dtype_size(out.dtype()));
      },
      g_device);
  return {peak, out_bytes};
}

// The comma-separated op names of --filter (empty: all); unknown names fail listing the known.
std::vector<std::string> parse_filter(const std::string& filter) {
  std::vector<std::string> known, names;
  for (const Case& c : cases())
    if (std::find(known.begin(), known.end(), c.op) == known.end()) known.push_back(c.op);
  for (const std::string& name : bench::split_list(filter, "--filter")) {
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      names.push_back(name);
      continue;
    }
    std::string message = "[bench] unknown op '" + name + "'; known:";
    for (const std::string& k : known) message += " " + k;
    throw std::runtime_error(message);
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Program program("Time and peak memory of relpos's core ops on fixed shapes.",
                       "relpos_bench_ops");
  cli::Command app = program.root();
  bool json = false;
  std::string filter, device = "cpu";
  double min_seconds = 0.5;
  app.add_flag("--json", json, "one JSON object per op and shape per line");
  app.add_option("--filter", filter, "only these ops").type_name("OP,...");
  app.add_option("--min-time", min_seconds, "seconds per timing")
      .check_non_negative()
      .capture_default_str();
  app.add_option("--device", device, "cpu or cuda").capture_default_str();
  return program.run(argc, argv, [&] {
    const std::vector<std::string> ops = parse_filter(filter);
    g_device = Device::parse(device);
    const int threads = omp_get_max_threads(), blas_threads = openblas_get_num_threads();
    if (!json)
      std::printf(
          "relpos ops on %s: %d OpenMP threads, %d OpenBLAS threads, f32 unless the shape says "
          "bf16\n%-11s %-36s %10s "
          "%10s %6s %9s\n",
          g_device.str().c_str(), threads, blas_threads, "op", "shape", "median ms", "min ms",
          "runs", "peak MB");
    Generator gen(0);
    for (const Case& c : cases()) {
      if (!ops.empty() && std::find(ops.begin(), ops.end(), c.op) == ops.end()) continue;
      const int64_t live_before = memory_stats(g_device).current_bytes;
      const Call call = c.make(gen);
      const int64_t in_bytes = memory_stats(g_device).current_bytes - live_before;  // the inputs
      const bench::Timing t = bench::time_call(call, g_device, min_seconds);
      const Memory m = memory_of(call);
      if (json)
        std::printf("%s\n", json_line({{"op", c.op},
                                       {"shape", c.shape},
                                       {"device", g_device.str()},
                                       {"median_ms", bench::rounded_ms(t.median_ms)},
                                       {"min_ms", bench::rounded_ms(t.min_ms)},
                                       {"runs", t.runs},
                                       {"peak_bytes", m.peak_bytes},
                                       {"io_bytes", in_bytes + m.out_bytes},
                                       {"threads", threads},
                                       {"blas_threads", blas_threads}})
                                .c_str());
      else
        std::printf("%-11s %-36s %10.3f %10.3f %6lld %9.2f\n", c.op, c.shape, t.median_ms, t.min_ms,
                    static_cast<long long>(t.runs), static_cast<double>(m.peak_bytes) / (1 << 20));
      std::fflush(stdout);
    }
    return 0;
  });
}
