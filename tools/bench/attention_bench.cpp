// The attention benchmark's variant table and measurement (tools/bench/attention_bench.h). One
// timed call is attend(q, k, v) (layers/attention/multi_head.h) on [B, H, N, D] inputs and
// backward from a fixed output gradient, producing the gradients of q, k, v and the parameters.
#include "tools/bench/attention_bench.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <new>
#include <optional>

#include <fmt/ranges.h>

#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "layers/attention/multi_head.h"

namespace relpos::bench {

const std::vector<AttentionVariant>& attention_variants() {
  static const std::vector<AttentionVariant> table = attention_setups();
  return table;
}

std::vector<const AttentionVariant*> select_variants(const std::vector<std::string>& filter) {
  std::vector<const AttentionVariant*> out;
  for (const std::string& name : filter) {
    const bool known = std::any_of(attention_variants().begin(), attention_variants().end(),
                                   [&](const AttentionVariant& v) { return name == v.name; });
    if (known) continue;
    std::vector<std::string> names;
    for (const AttentionVariant& v : attention_variants()) names.push_back(v.name);
    fail("bench", "unknown variant '{}'; known: {}", name, fmt::join(names, ", "));
  }
  for (const AttentionVariant& v : attention_variants())
    if (filter.empty() || std::find(filter.begin(), filter.end(), v.name) != filter.end())
      out.push_back(&v);
  return out;
}

std::vector<int64_t> parse_lengths(const std::string& text) {
  std::vector<int64_t> out;
  for (const std::string& s : split_list(text, "--lengths")) {
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    RELPOS_CHECK(ec == std::errc() && end == s.data() + s.size() && n > 0, "bench",
                 "a length must be a positive integer, got '{}' in '{}'", s, text);
    out.push_back(n);
  }
  RELPOS_CHECK(!out.empty(), "bench", "no lengths given ('{}')", text);
  return out;
}

namespace {

// Whether an error is a failed allocation: the CPU and CUDA allocators' own (OutOfMemory), or one
// inside cuBLAS / cuFFT / the CUDA runtime (core/cuda/check.h passes their status names on).
bool is_out_of_memory(const Error& e) {
  if (dynamic_cast<const OutOfMemory*>(&e) != nullptr) return true;
  const std::string what = e.what();
  for (const char* mark : {"ALLOC_FAILED", "cudaErrorMemoryAllocation"})
    if (what.find(mark) != std::string::npos) return true;
  return false;
}

std::string megabytes(int64_t bytes) {
  return fmt::format("{:.2f} MB", static_cast<double>(bytes) / (1 << 20));
}

// One variant at one length. Returns status measured, or oom when a measured peak exceeds the
// limit; a failed allocation throws (caught by the caller).
AttentionResult measure(const AttentionVariant& variant, int64_t n, const AttentionBenchOptions& o,
                        Generator& gen) {
  const Device device = o.device;
  const int64_t B = o.batch, H = o.heads, D = o.dim;
  AttentionResult r;
  r.variant = &variant;
  r.length = n;
  // As MultiHeadAttention: the encoding first, since a q/k rewrite (SPE) sets the size the
  // variant is built for. Sizes come from the length (max_len = n).
  AttentionOptions opt{variant.positional, H, D, H * D, n, DType::f32, &gen};
  std::shared_ptr<Positional> positional;
  std::shared_ptr<Attention> attention;
  try {
    positional = make_positional(opt);
    opt.options = variant.attention;
    if (positional) opt.head_dim = positional->qk_dim(D);
    attention = make_attention(opt);
    if (positional) positional->check_host(*attention);
  } catch (const Error& e) {
    r.status = AttentionResult::Status::skipped;
    r.reason = std::string("not built at this length: ") + e.what();
    return r;
  }
  attention->to(device);
  if (positional) positional->to(device);
  const Tensor q = randn({B, H, n, D}, gen, 0, 0.5, DType::f32, device);  // [B, H, N, D]
  const Tensor k = randn({B, H, n, D}, gen, 0, 0.5, DType::f32, device);
  const Tensor v = randn({B, H, n, D}, gen, 0, 1, DType::f32, device);
  const Tensor grad = randn({B, H, n, D}, gen, 0, 1, DType::f32, device);  // d loss / d out
  const AttentionInputs inputs{Tensor(), variant.causal, nullptr};
  const AutocastGuard precision(o.precision);
  const auto forward_backward = [&] {
    const Var qv(q, true), kv(k, true), vv(v, true);
    const Var out = attend(*attention, positional.get(), qv, kv, vv, inputs);
    out.backward(grad);
    attention->zero_grad();
    if (positional) positional->zero_grad();
    return out.value();
  };
  const auto over_limit = [&](int64_t peak) {
    if (o.memory_limit_bytes <= 0 || peak <= o.memory_limit_bytes) return false;
    r.status = AttentionResult::Status::oom;
    r.peak_bytes = peak;
    r.reason = "measured peak " + megabytes(peak) + " exceeds the limit of " +
               megabytes(o.memory_limit_bytes);
    return true;
  };
  // One call first: a variant over the memory limit stops here, before the timed repeats.
  if (over_limit(peak_bytes_of([&] { forward_backward(); }, device))) return r;
  r.forward_backward = time_call(forward_backward, device, o.min_seconds, o.min_runs);
  if (o.time_forward) {
    const NoGradGuard no_grad;  // the forward pass alone, as at inference: no graph recorded
    const auto forward = [&] {
      return attend(*attention, positional.get(), Var(q), Var(k), Var(v), inputs).value();
    };
    r.forward = time_call(forward, device, o.min_seconds, o.min_runs);
  }
  r.peak_bytes = peak_bytes_of([&] { forward_backward(); }, device);
  over_limit(r.peak_bytes);
  return r;
}

}  // namespace

int64_t megabytes_to_bytes(double megabytes) {
  const double bytes = megabytes * (1 << 20);
  // 2^63 as a double: the first value past INT64_MAX (casting it or more is undefined).
  constexpr double kPastInt64 = 9223372036854775808.0;
  return bytes >= kPastInt64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bytes);
}

void check_device(Device device) {
  RELPOS_CHECK(device.is_cpu() || cuda_available(), "bench",
               "device {} is not available (relpos built without CUDA, or no GPU visible)",
               device.str());
}

void run_attention_bench(const AttentionBenchOptions& options,
                         const std::vector<const AttentionVariant*>& variants,
                         const std::function<void(const AttentionResult&)>& report) {
  check_device(options.device);
  std::vector<int64_t> lengths = options.lengths;
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  Generator gen(0);
  for (const AttentionVariant* variant : variants) {
    std::optional<std::string> oom_at;  // set once the variant ran out of memory
    int64_t prev_n = 0, prev_peak = 0;  // the last length measured and its peak
    for (const int64_t n : lengths) {
      AttentionResult r;
      r.variant = variant;
      r.length = n;
      const double ratio =
          static_cast<double>(n) / static_cast<double>(std::max<int64_t>(prev_n, 1));
      const double predicted =
          static_cast<double>(prev_peak) * (variant->quadratic ? ratio * ratio : ratio);
      if (oom_at) {
        r.status = AttentionResult::Status::oom;
        r.reason = *oom_at;
      } else if (variant->quadratic && options.max_quadratic_n > 0 && n > options.max_quadratic_n) {
        r.status = AttentionResult::Status::skipped;
        r.reason = "N^2 memory above --max-quadratic-n";
      } else if (options.memory_limit_bytes > 0 && prev_n > 0 &&
                 predicted > static_cast<double>(options.memory_limit_bytes)) {
        r.status = AttentionResult::Status::oom;
        r.reason = fmt::format("predicted peak {} (from {} at N = {}) exceeds the limit of {}",
                               megabytes(static_cast<int64_t>(predicted)), megabytes(prev_peak),
                               prev_n, megabytes(options.memory_limit_bytes));
      } else {
        try {
          r = measure(*variant, n, options, gen);
        } catch (const std::bad_alloc&) {
          r.status = AttentionResult::Status::oom;
          r.reason = "allocation failed (std::bad_alloc)";
        } catch (const Error& e) {
          if (!is_out_of_memory(e)) throw;
          r.status = AttentionResult::Status::oom;
          r.reason = e.what();
        }
        // Everything of the call is freed by now; give a device's cached blocks back so the
        // next variant starts from the same free memory.
        if (r.status == AttentionResult::Status::oom) empty_cache(options.device);
      }
      if (r.status == AttentionResult::Status::measured) {
        prev_n = n;
        prev_peak = r.peak_bytes;
      } else if (r.status == AttentionResult::Status::oom && !oom_at) {
        oom_at = fmt::format("out of memory at N = {}", n);
      }
      report(r);
    }
  }
}

}  // namespace relpos::bench
