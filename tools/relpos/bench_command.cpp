// `relpos bench attention [--lengths ...] [--device cpu|cuda] [--json] ...` (DESIGN §7): forward
// and forward+backward time and peak memory of the attention variants over growing lengths, with
// out-of-memory lengths marked as the paper's Figure 3 does. The variants and the measurement
// are tools/bench/attention_bench.h's, shared with relpos_bench_attention.
#include <omp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "core/allocator.h"
#include "core/error.h"
#include "core/file_write.h"
#include "core/json.h"
#include "tools/bench/attention_bench.h"
#include "tools/relpos/arguments.h"
#include "tools/relpos/commands.h"

namespace relpos::cli {

namespace {

constexpr const char* kAttentionFooter =
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
    "{\"device\", \"batch\", \"heads\", \"dim\", \"threads\", \"results\": [{\"variant\",\n"
    "\"length\", \"forward_ms\", \"forward_backward_ms\", \"peak_bytes\", \"oom\"}, ...]} (an OOM\n"
    "entry has null times and a \"reason\"); progress goes to stderr. --json-out FILE writes\n"
    "that object to FILE (making its folder) and still prints the table.";

// The command line of `bench attention`, numbers as given (checked by bench_attention).
struct AttentionArgs {
  bench::AttentionBenchOptions o;
  std::string lengths, batch, heads, dim, device, filter, min_time, limit_mb, json_out;
  bool json = false, list = false;
};

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

// The options of `a`, its numbers checked; the memory limit in MB (-1: the device's default).
double read_options(AttentionArgs& a) {
  bench::AttentionBenchOptions& o = a.o;
  if (!a.lengths.empty()) o.lengths = bench::parse_lengths(a.lengths);
  if (!a.batch.empty()) o.batch = parse_positive<int64_t>("bench", "--batch", a.batch);
  if (!a.heads.empty()) o.heads = parse_positive<int64_t>("bench", "--heads", a.heads);
  if (!a.dim.empty()) o.dim = parse_positive<int64_t>("bench", "--dim", a.dim);
  if (!a.device.empty()) o.device = Device::parse(a.device);
  if (!a.min_time.empty()) o.min_seconds = parse_min_time(a.min_time);
  return a.limit_mb.empty() ? -1 : parse_positive<double>("bench", "--memory-limit-mb", a.limit_mb);
}

int bench_attention(AttentionArgs& a) {
  const double limit_mb = read_options(a);  // checked with --list too: none is ignored
  const auto variants = bench::select_variants(bench::split_list(a.filter, "--filter"));
  if (a.list) {
    for (const bench::AttentionVariant* v : variants) std::printf("%s\n", v->name.c_str());
    return 0;
  }
  bench::AttentionBenchOptions& o = a.o;
  const bool json = a.json;
  const std::string& json_out = a.json_out;
  bench::check_device(o.device);
  if (!json_out.empty()) check_write("bench", json_out);  // refused before the run
  if (limit_mb > 0)
    o.memory_limit_bytes = bench::megabytes_to_bytes(limit_mb);
  else if (o.device.is_cpu())
    o.memory_limit_bytes = available_cpu_memory().value_or(0);
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
    make_file_folder("bench", json_out);
    write_file_atomic("bench", json_out, object);
  }
  return 0;
}

}  // namespace

void add_bench_command(Command app, int& status) {
  Command bench = app.add_subcommand("bench", "Benchmarks: attention, index-first.");
  bench.require_subcommand();
  auto a = std::make_shared<AttentionArgs>();
  Command sub = bench.add_subcommand(
      "attention", "Time and peak memory of the attention variants over growing lengths.");
  sub.footer(kAttentionFooter);
  sub.add_option("--lengths", a->lengths, "sequence lengths N").type_name("1024,2048,...");
  sub.add_option("--batch", a->batch, "batch size (default 1)").type_name("B");
  sub.add_option("--heads", a->heads, "heads (default 8)").type_name("H");
  sub.add_option("--dim", a->dim, "head dimension (default 32)").type_name("D");
  sub.add_option("--device", a->device, "cpu or cuda").type_name("cpu|cuda");
  sub.add_flag("--json", a->json, "one JSON object on stdout instead of the table");
  sub.add_option("--json-out", a->json_out, "also writes the JSON object to FILE")
      .type_name("FILE");
  sub.add_option("--filter", a->filter, "only these variants").type_name("NAME,...");
  sub.add_option("--min-time", a->min_time, "seconds per timing (default 0.5)").type_name("S");
  sub.add_option("--memory-limit-mb", a->limit_mb, "out of memory above M MB (fractional)")
      .type_name("M");
  sub.add_flag("--list", a->list, "the variant names (of --filter), one per line; runs nothing");
  sub.callback([a, &status] { status = bench_attention(*a); });
  add_bench_index_first(bench, status);
}

}  // namespace relpos::cli
