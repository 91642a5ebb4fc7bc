// `relpos bench attention [--lengths ...] [--device cpu|cuda] [--json] ...` (DESIGN §7): forward
// and forward+backward time and peak memory of the attention variants over growing lengths, with
// out-of-memory lengths marked as the paper's Figure 3 does. The variants and the measurement
// are tools/bench/attention_bench.h's, shared with relpos_bench_attention.
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/file_write.h"
#include "core/json.h"
#include "tools/bench/attention_bench.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

constexpr const char* kBenchUsage =
    "usage: relpos bench attention [--lengths 1024,2048,...] [--batch B] [--heads H] [--dim D]\n"
    "                              [--device cpu|cuda] [--json] [--json-out FILE]\n"
    "                              [--filter NAME,...]\n"
    "                              [--min-time S] [--memory-limit-mb M (may be fractional)]\n"
    "       relpos bench attention --list   (the variant names, one per line)\n"
    "       relpos bench index-first --help (ISDPA against the standard first attention)\n"
    "Times every attention variant (or those of --filter) on [B, H, N, D] f32 inputs for each\n"
    "length N: the forward pass alone (no graph recorded) and forward + backward from a fixed\n"
    "output gradient, each the median of repeats (two warm-up calls, then at least 3 runs and\n"
    "--min-time seconds), and the peak bytes relpos's allocator held during one forward +\n"
    "backward call. Defaults: lengths 1024,2048,4096,8192,16384, B 1, H 8, D 32, cpu, 0.5 s.\n"
    "A variant out of memory at a length is marked OOM there and at every longer length, and\n"
    "the next variant runs. Out of memory: a failed allocation, or a peak over M MB, measured or\n"
    "predicted from the previous length (x (N/N_prev)^2 for softmax-like variants, x N/N_prev\n"
    "for linear ones). M defaults, on the CPU, to the memory available when the run starts (the\n"
    "kernel would rather kill the process than fail an allocation); on a GPU, to no limit.\n"
    "Prints a table (variant, N, fwd ms, fwd+bwd ms, peak MB), or with --json one JSON object:\n"
    "{\"device\", \"batch\", \"heads\", \"dim\", \"threads\", \"results\": [{\"variant\", "
    "\"length\",\n"
    "\"forward_ms\", \"forward_backward_ms\", \"peak_bytes\", \"oom\"}, ...]} (an OOM entry has "
    "null\n"
    "times and a \"reason\"); progress goes to stderr. --json-out FILE writes that object to\n"
    "FILE and still prints the table.\n";

// MemAvailable of /proc/meminfo in bytes; 0 (no limit) when it cannot be read.
int64_t available_cpu_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  int64_t kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// One result; an OOM or skipped one has null timings, its flag set and the reason.
Json result_json(const bench::AttentionResult& r) {
  const bool oom = r.status == bench::AttentionResult::Status::oom;
  const bool skipped = r.status == bench::AttentionResult::Status::skipped;
  Json j = {{"variant", r.variant->name}, {"length", r.length}};
  j["forward_ms"] = oom || skipped ? Json() : Json(bench::rounded_ms(r.forward.median_ms));
  j["forward_backward_ms"] =
      oom || skipped ? Json() : Json(bench::rounded_ms(r.forward_backward.median_ms));
  j["peak_bytes"] = !(oom || skipped) || r.peak_bytes > 0 ? Json(r.peak_bytes) : Json();
  j["oom"] = oom;
  j["skipped"] = skipped;
  if (oom || skipped) j["reason"] = r.reason;
  return j;
}

int bench_attention(const std::vector<std::string>& args) {
  bench::AttentionBenchOptions o;
  std::vector<std::string> filter;
  bool json = false;
  std::string json_out;  // --json-out FILE: the JSON object to FILE, the table to stdout
  double limit_mb = -1;  // -1: the device's default
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      RELPOS_CHECK(i + 1 < args.size(), "bench", "{} needs a value (see relpos bench --help)", a);
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (a == "--list") {
      for (const bench::AttentionVariant& v : bench::attention_variants())
        std::printf("%s\n", v.name.c_str());
      return 0;
    } else if (a == "--lengths") {
      o.lengths = bench::parse_lengths(value());
    } else if (a == "--batch") {
      o.batch = parse_positive<int64_t>("bench", a, value());
    } else if (a == "--heads") {
      o.heads = parse_positive<int64_t>("bench", a, value());
    } else if (a == "--dim") {
      o.dim = parse_positive<int64_t>("bench", a, value());
    } else if (a == "--device") {
      o.device = Device::parse(value());
    } else if (a == "--json") {
      json = true;
    } else if (a == "--json-out") {
      json_out = value();
    } else if (a == "--filter") {
      filter = bench::split_list(value());
    } else if (a == "--min-time") {
      o.min_seconds = parse_positive<double>("bench", a, value());
    } else if (a == "--memory-limit-mb") {
      limit_mb = parse_positive<double>("bench", a, value());
    } else {
      fail("bench", "unknown option '{}' (see relpos bench attention --help)", a);
    }
  }
  const auto variants = bench::select_variants(filter);
  bench::check_device(o.device);
  if (limit_mb > 0)
    o.memory_limit_bytes = static_cast<int64_t>(limit_mb * (1 << 20));
  else if (o.device.is_cpu())
    o.memory_limit_bytes = available_cpu_memory();
  const int threads = omp_get_max_threads();
  std::fprintf(
      stderr,
      "relpos bench attention on %s: B %lld, H %lld, D %lld, f32, %d threads, memory "
      "limit %s\n",
      o.device.str().c_str(), static_cast<long long>(o.batch), static_cast<long long>(o.heads),
      static_cast<long long>(o.dim), threads,
      o.memory_limit_bytes > 0
          ? fmt::format("{:.2f} MB", static_cast<double>(o.memory_limit_bytes) / (1 << 20)).c_str()
          : "none");
  if (!json)
    std::printf("%-22s %7s %11s %11s %10s\n", "variant", "N", "fwd ms", "fwd+bwd ms", "peak MB");
  Json results = Json::array();
  bench::run_attention_bench(o, variants, [&](const bench::AttentionResult& r) {
    const char* name = r.variant->name.c_str();
    const auto n = static_cast<long long>(r.length);
    const bool oom = r.status == bench::AttentionResult::Status::oom;
    const bool measured = r.status == bench::AttentionResult::Status::measured;
    if (!measured)
      std::fprintf(stderr, "%s N %lld: %s: %s\n", name, n, oom ? "OOM" : "skipped",
                   r.reason.c_str());
    if (json || !json_out.empty()) results.push_back(result_json(r));
    if (json) {
      if (measured)
        std::fprintf(stderr, "%s N %lld: fwd %.3f ms, fwd+bwd %.3f ms, peak %.1f MB\n", name, n,
                     r.forward.median_ms, r.forward_backward.median_ms,
                     static_cast<double>(r.peak_bytes) / (1 << 20));
    } else if (!measured) {
      const char* what = oom ? "OOM" : "skipped";
      std::printf("%-22s %7lld %11s %11s %10s\n", name, n, what, what, what);
    } else {
      std::printf("%-22s %7lld %11.3f %11.3f %10.1f\n", name, n, r.forward.median_ms,
                  r.forward_backward.median_ms, static_cast<double>(r.peak_bytes) / (1 << 20));
    }
    std::fflush(stdout);
  });
  const Json summary = {{"device", o.device.str()}, {"batch", o.batch},
                        {"heads", o.heads},         {"dim", o.dim},
                        {"threads", threads},       {"results", results}};
  const std::string object = json_line(summary) + "\n";
  if (json) std::fputs(object.c_str(), stdout);
  if (!json_out.empty()) {
    write_file_atomic("bench", json_out, object);
  }
  return 0;
}

}  // namespace

int bench_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kBenchUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "attention") return bench_attention({args.begin() + 1, args.end()});
  if (args[0] == "index-first") return bench_index_first({args.begin() + 1, args.end()});
  fail("bench", "unknown benchmark '{}'; known: attention, index-first", args[0]);
}

}  // namespace relpos::cli
