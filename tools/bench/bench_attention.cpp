// relpos_bench_attention: forward + backward time and peak memory of every attention variant on
// [B, H, N, D] inputs for growing N, on the CPU or a GPU — the same variant names, shapes and
// timing method as bench_attention_torch.py, so run_attention_bench.sh can put relpos and
// PyTorch side by side. The variants and the measurement are tools/bench/attention_bench.h's,
// shared with `relpos bench attention` (which also times the forward pass alone).
// Usage: relpos_bench_attention [--json] [--device cpu|cuda] [--filter NAME[,NAME...]]
//          [--lengths 1024,2048,...] [--batch 1] [--heads 8] [--dim 32] [--min-time S]
//          [--max-quadratic-n N (default 8192: larger N skip variants with N^2 memory)]
//          [--memory-limit-mb M (a peak above M counts as out of memory)]
//        relpos_bench_attention --list   (the variant names, one per line)
// --json prints one object per measured (variant, N) per line; a variant out of memory is
// reported on stderr (and "OOM" in the table) and not run at longer lengths.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/json.h"
#include "tools/bench/attention_bench.h"

using namespace relpos;

int main(int argc, char** argv) try {
  using bench::flag_value;
  if (bench::has_flag(argc, argv, "--list")) {
    for (const bench::AttentionVariant& v : bench::attention_variants())
      std::printf("%s\n", v.name.c_str());
    return 0;
  }
  const bool json = bench::has_flag(argc, argv, "--json");
  bench::AttentionBenchOptions o;
  o.device = Device::parse(flag_value(argc, argv, "--device", "cpu"));
  bench::check_device(o.device);
  const auto variants =
      bench::select_variants(bench::split_list(flag_value(argc, argv, "--filter", "")));
  o.lengths =
      bench::parse_lengths(flag_value(argc, argv, "--lengths", "1024,2048,4096,8192,16384"));
  o.batch = std::stoll(flag_value(argc, argv, "--batch", "1"));
  o.heads = std::stoll(flag_value(argc, argv, "--heads", "8"));
  o.dim = std::stoll(flag_value(argc, argv, "--dim", "32"));
  o.min_seconds = std::strtod(flag_value(argc, argv, "--min-time", "0.5").c_str(), nullptr);
  o.max_quadratic_n = std::stoll(flag_value(argc, argv, "--max-quadratic-n", "8192"));
  o.memory_limit_bytes = std::stoll(flag_value(argc, argv, "--memory-limit-mb", "0")) << 20;
  o.time_forward = false;  // run_attention_bench.sh compares forward+backward only
  o.min_runs = 3;
  if (!json)
    std::printf(
        "relpos attention fwd+bwd on %s: B %lld, H %lld, D %lld, f32, %d threads\n%-22s %7s %11s "
        "%10s %6s %10s\n",
        o.device.str().c_str(), static_cast<long long>(o.batch), static_cast<long long>(o.heads),
        static_cast<long long>(o.dim), omp_get_max_threads(), "variant", "N", "median ms", "min ms",
        "runs", "peak MB");
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
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "relpos_bench_attention: %s\n", e.what());
  return 2;
}
