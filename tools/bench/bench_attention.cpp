// relpos_bench_attention: forward + backward time and peak memory of every attention variant on
// [B, H, N, D] inputs for growing N, on the CPU or a GPU — the same variant names, shapes and
// timing method as bench_attention_torch.py, so run_attention_bench.sh can put relpos and
// PyTorch side by side. One timed call = attend(q, k, v) (layers/attention/multi_head.h) and
// backward from a fixed output gradient, producing the gradients of q, k, v and the parameters.
// Usage: relpos_bench_attention [--json] [--device cpu|cuda] [--filter NAME[,NAME...]]
//          [--lengths 1024,2048,...] [--batch 1] [--heads 8] [--dim 32] [--min-time S]
//          [--max-quadratic-n N (default 8192: larger N skip variants with N^2 memory)]
//        relpos_bench_attention --list   (the variant names, one per line)
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "layers/attention/multi_head.h"
#include "tools/bench/bench_common.h"

using namespace relpos;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Variant {
  const char* name;  // --filter; identical in bench_attention_torch.py
  Pairs attention, positional;
  bool causal = false;
  bool quadratic = false;  // N^2 memory: skipped above --max-quadratic-n
};

// "{n}" in an option value is replaced by the sequence length.
const std::vector<Variant>& variants() {
  static const std::vector<Variant> table = {
      {"softmax", {{"type", "softmax"}}, {}, false, true},
      {"softmax_causal", {{"type", "softmax"}}, {}, true, true},
      {"linear_elu1", {{"type", "linear"}, {"feature_map", "elu1"}}, {}},
      {"linear_relu", {{"type", "linear"}, {"feature_map", "relu"}}, {}},
      {"linear_sikf", {{"type", "linear"}, {"feature_map", "sikf"}}, {}},
      {"linear_dpfp", {{"type", "linear"}, {"feature_map", "dpfp"}, {"nu", "1"}}, {}},
      {"linear_performer",
       {{"type", "linear"}, {"feature_map", "performer"}, {"num_features", "64"}},
       {}},
      {"linear_elu1_causal", {{"type", "linear"}, {"feature_map", "elu1"}}, {}, true},
      {"linear_sikf_fastrpb",
       {{"type", "linear"}, {"feature_map", "sikf"}},
       {{"type", "fastrpb"}, {"max_len", "{n}"}}},
      {"linear_sikf_sinspe",
       {{"type", "linear"}, {"feature_map", "sikf"}},
       {{"type", "sinspe"}, {"num_realizations", "64"}, {"num_sines", "10"}}},
      {"linear_sikf_convspe",
       {{"type", "linear"}, {"feature_map", "sikf"}},
       {{"type", "convspe"}, {"num_realizations", "64"}, {"kernel_size", "128"}}},
      {"linear_elu1_shaw",
       {{"type", "linear"}, {"feature_map", "elu1"}, {"algorithm", "linear"}},
       {{"type", "shaw"}, {"window", "8"}, {"algorithm", "linear"}}},
      {"softmax_skew", {{"type", "softmax"}}, {{"type", "skew"}, {"max_len", "{n}"}}, false, true},
      {"rel_xl", {{"type", "rel_xl"}}, {}, true, true},
  };
  return table;
}

Options options_for(const char* where, const Pairs& pairs, int64_t n) {
  Options opt(where);
  for (const auto& [key, value] : pairs) opt.set(key, value == "{n}" ? std::to_string(n) : value);
  return opt;
}

std::vector<int64_t> parse_lengths(const std::string& text) {
  std::vector<int64_t> out;
  for (const std::string& s : bench::split_list(text)) out.push_back(std::stoll(s));
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  using bench::flag_value;
  if (bench::has_flag(argc, argv, "--list")) {
    for (const Variant& v : variants()) std::printf("%s\n", v.name);
    return 0;
  }
  const bool json = bench::has_flag(argc, argv, "--json");
  const Device device = Device::parse(flag_value(argc, argv, "--device", "cpu"));
  const std::vector<std::string> names = bench::split_list(flag_value(argc, argv, "--filter", ""));
  const auto lengths =
      parse_lengths(flag_value(argc, argv, "--lengths", "1024,2048,4096,8192,16384"));
  const int64_t B = std::stoll(flag_value(argc, argv, "--batch", "1"));
  const int64_t H = std::stoll(flag_value(argc, argv, "--heads", "8"));
  const int64_t D = std::stoll(flag_value(argc, argv, "--dim", "32"));
  const double min_seconds =
      std::strtod(flag_value(argc, argv, "--min-time", "0.5").c_str(), nullptr);
  const int64_t max_quadratic_n = std::stoll(flag_value(argc, argv, "--max-quadratic-n", "8192"));
  for (const std::string& name : names) {
    bool known = false;
    for (const Variant& v : variants()) known = known || name == v.name;
    if (known) continue;
    std::string message = "[bench] unknown variant '" + name + "'; known:";
    for (const Variant& v : variants()) message += std::string(" ") + v.name;
    throw std::runtime_error(message);
  }
  if (!json)
    std::printf(
        "relpos attention fwd+bwd on %s: B %lld, H %lld, D %lld, f32, %d threads\n%-22s %7s %11s "
        "%10s %6s %10s\n",
        device.str().c_str(), static_cast<long long>(B), static_cast<long long>(H),
        static_cast<long long>(D), omp_get_max_threads(), "variant", "N", "median ms", "min ms",
        "runs", "peak MB");
  Generator gen(0);
  for (const Variant& variant : variants()) {
    if (!names.empty() && std::find(names.begin(), names.end(), variant.name) == names.end())
      continue;
    for (const int64_t n : lengths) {
      if (variant.quadratic && n > max_quadratic_n) {
        if (!json)
          std::printf("%-22s %7lld   skipped: N^2 memory above --max-quadratic-n\n", variant.name,
                      static_cast<long long>(n));
        continue;
      }
      // As MultiHeadAttention: the encoding first, since a q/k rewrite (SPE) sets the size
      // the variant is built for.
      AttentionOptions opt{
          options_for("positional", variant.positional, n), H, D, H * D, n, DType::f32, &gen};
      auto positional = make_positional(opt);
      opt.options = options_for("attention", variant.attention, n);
      if (positional) opt.head_dim = positional->qk_dim(D);
      auto attention = make_attention(opt);
      attention->to(device);
      if (positional) positional->to(device);
      const Tensor q = randn({B, H, n, D}, gen, 0, 0.5, DType::f32, device);
      const Tensor k = randn({B, H, n, D}, gen, 0, 0.5, DType::f32, device);
      const Tensor v = randn({B, H, n, D}, gen, 0, 1, DType::f32, device);
      const Tensor grad = randn({B, H, n, D}, gen, 0, 1, DType::f32, device);
      const auto call = [&] {
        const Var qv(q, true), kv(k, true), vv(v, true);
        const Var out =
            attend(*attention, positional.get(), qv, kv, vv, {Tensor(), variant.causal, nullptr});
        out.backward(grad);
        attention->zero_grad();
        if (positional) positional->zero_grad();
        return out.value();
      };
      const bench::Timing t = bench::time_call(call, device, min_seconds, 3);
      const int64_t peak = bench::peak_bytes_of([&] { call(); }, device);
      if (json)
        std::printf(
            "{\"variant\": \"%s\", \"n\": %lld, \"device\": \"%s\", \"median_ms\": %.4f, "
            "\"min_ms\": %.4f, \"runs\": %lld, \"peak_bytes\": %lld}\n",
            variant.name, static_cast<long long>(n), device.str().c_str(), t.median_ms, t.min_ms,
            static_cast<long long>(t.runs), static_cast<long long>(peak));
      else
        std::printf("%-22s %7lld %11.2f %10.2f %6lld %10.1f\n", variant.name,
                    static_cast<long long>(n), t.median_ms, t.min_ms,
                    static_cast<long long>(t.runs), static_cast<double>(peak) / (1 << 20));
      std::fflush(stdout);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "relpos_bench_attention: %s\n", e.what());
  return 2;
}
