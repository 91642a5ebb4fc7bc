// relpos_bench_attention: forward + backward time and peak memory of every attention variant on
// [B, H, N, D] inputs for growing N, on the CPU or a GPU — the same variant names, shapes and
// timing method as bench_attention_torch.py, so run_attention_bench.sh can put relpos and
// PyTorch side by side. The variants and the measurement are tools/bench/attention_bench.h's,
// shared with `relpos bench attention` (which also times the forward pass alone).
// Options: relpos_bench_attention --help.
// --json prints one object per measured (variant, N) per line; a variant out of memory is
// reported on stderr (and "OOM" in the table) and not run at longer lengths.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/json.h"
#include "tools/bench/attention_bench.h"
#include "tools/command_line/command_line.h"

using namespace relpos;

namespace {

// Measures `variants` at o's lengths and prints a table or, with `json`, one line per result.
void run(const bench::AttentionBenchOptions& o,
         const std::vector<const bench::AttentionVariant*>& variants, bool json) {
  if (!json)
    std::printf(
        "relpos attention fwd+bwd on %s: B %lld, H %lld, D %lld, %s, %d threads\n%-22s %7s %11s "
        "%10s %6s %10s\n",
        o.device.str().c_str(), static_cast<long long>(o.batch), static_cast<long long>(o.heads),
        static_cast<long long>(o.dim), dtype_name(o.precision), omp_get_max_threads(), "variant",
        "N", "median ms", "min ms", "runs", "peak MB");
  bench::run_attention_bench(o, variants, [&](const bench::AttentionResult& r) {
    const char* name = r.variant->name.c_str();
    const auto n = static_cast<long long>(r.length);
    const bench::Timing& t = r.forward_backward;
    if (r.status != bench::AttentionResult::Status::measured) {
      const bool oom = r.status == bench::AttentionResult::Status::oom;
      if (json)
        std::fprintf(stderr, "%s N %lld: %s: %s\n", name, n, oom ? "OOM" : "skipped",
                     r.reason.c_str());
      else
        std::printf("%-22s %7lld   %s: %s\n", name, n, oom ? "OOM" : "skipped", r.reason.c_str());
    } else if (json) {
      const Json line = {{"variant", name},
                         {"n", n},
                         {"device", o.device.str()},
                         {"median_ms", bench::rounded_ms(t.median_ms)},
                         {"min_ms", bench::rounded_ms(t.min_ms)},
                         {"runs", t.runs},
                         {"peak_bytes", r.peak_bytes}};
      std::printf("%s\n", json_line(line).c_str());
    } else {
      std::printf("%-22s %7lld %11.2f %10.2f %6lld %10.1f\n", name, n, t.median_ms, t.min_ms,
                  static_cast<long long>(t.runs), static_cast<double>(r.peak_bytes) / (1 << 20));
    }
    std::fflush(stdout);
  });
}

}  // namespace

int main(int argc, char** argv) {
  cli::Program program(
      "Forward + backward time and peak memory of the attention variants over growing N.",
      "relpos_bench_attention");
  cli::Command app = program.root();
  bench::AttentionBenchOptions o;
  o.max_quadratic_n = 8192;
  bool list = false, json = false;
  std::string device = "cpu", filter, lengths = "1024,2048,4096,8192,16384", precision = "f32";
  int64_t limit_mb = 0;
  app.add_flag("--list", list, "the variant names, one per line");
  app.add_flag("--json", json, "one JSON object per measured (variant, N) per line");
  app.add_option("--device", device, "cpu or cuda").capture_default_str();
  app.add_option("--filter", filter, "only these variants").type_name("NAME,...");
  app.add_option("--lengths", lengths, "sequence lengths N").capture_default_str();
  app.add_option("--batch", o.batch, "batch size").check_positive().capture_default_str();
  app.add_option("--heads", o.heads, "heads").check_positive().capture_default_str();
  app.add_option("--dim", o.dim, "head dimension").check_positive().capture_default_str();
  app.add_option("--min-time", o.min_seconds, "seconds per timing")
      .check_non_negative()
      .capture_default_str();
  app.add_option("--max-quadratic-n", o.max_quadratic_n,
                 "longer N skip the variants with N^2 memory")
      .check_non_negative()
      .capture_default_str();
  app.add_option("--memory-limit-mb", limit_mb, "a peak above M MB counts as out of memory")
      .check_non_negative();
  app.add_option("--precision", precision,
                 "f32, or bf16: products and the fused attention on bf16 operands (autocast)")
      .check_one_of({"f32", "bf16"})
      .capture_default_str();
  return program.run(argc, argv, [&] {
    if (list) {
      for (const bench::AttentionVariant& v : bench::attention_variants())
        std::printf("%s\n", v.name.c_str());
      return 0;
    }
    o.device = Device::parse(device);
    bench::check_device(o.device);
    o.lengths = bench::parse_lengths(lengths);
    o.precision = precision == "bf16" ? DType::bf16 : DType::f32;
    o.memory_limit_bytes =
        limit_mb > 0 ? bench::megabytes_to_bytes(static_cast<double>(limit_mb)) : 0;
    o.time_forward = false;  // run_attention_bench.sh compares forward+backward only
    o.min_runs = 3;
    run(o, bench::select_variants(bench::split_list(filter, "--filter")), json);
    return 0;
  });
}
