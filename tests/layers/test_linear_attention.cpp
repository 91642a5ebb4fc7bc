// linear attention against explicit loops for every feature map (odd lengths, Lq != Lk, padding,
// causal aligned at the ends, all three algorithms), f64 gradchecks, memory linear in N, the
// positional kernel-terms hook, refused options, and CPU ≡ CUDA.
#include <fmt/ranges.h>

#include "autograd/functions.h"
#include "layers/attention/catalog.h"
#include "layers/attention/feature_map.h"
#include "tests/layers/linear_naive.h"

using namespace relpos;

namespace {

constexpr DType f64 = DType::f64;
using test::Kv;

// Every registered feature map in each of its twin's test cases, as attention mappings.
std::vector<Kv> every_map_case() {
  std::vector<Kv> out;
  for (const std::string& name : feature_map_names())
    for (const Kv& extra : test::naive_feature_map_twin(name).cases)
      out.push_back(test::map_options(name, extra));
  return out;
}

Kv with(Kv kv, const std::string& key, const std::string& value) {
  kv.emplace_back(key, value);
  return kv;
}

// Kernel terms {A, b} fixed in advance, recording the phi(Q) it was handed.
class FixedKernelTerms final : public Positional {
 public:
  FixedKernelTerms(Tensor num, Tensor den) : num_(std::move(num)), den_(std::move(den)) {}
  std::string name() const override { return "test_kernel_terms"; }
  std::pair<Var, Var> kernel_terms(const Var& phi_q, const Var&, const AttentionInputs&) override {
    seen_phi_q = phi_q.value();
    return {Var(num_), den_.defined() ? Var(den_) : Var()};
  }
  Tensor num_, den_, seen_phi_q;
};

// Kernel terms linear in phi(q), as a relative encoding's are: {phi(q) M, phi(q) m} for fixed
// M [F, Dv] and m [F, 1] (positive, so the denominator stays positive).
class LinearKernelTerms final : public Positional {
 public:
  LinearKernelTerms(Tensor num, Tensor den) : num_(std::move(num)), den_(std::move(den)) {}
  std::string name() const override { return "test_linear_kernel_terms"; }
  std::pair<Var, Var> kernel_terms(const Var& phi_q, const Var&, const AttentionInputs&) override {
    return {matmul(phi_q, Var(num_)), matmul(phi_q, Var(den_))};
  }
  // phi_q [B, H, Lq, F] -> the same terms by loops.
  std::pair<Tensor, Tensor> naive(const Tensor& phi_q) const {
    const auto product = [&](const Tensor& m) {
      const int64_t rows = phi_q.numel() / phi_q.size(3), F = phi_q.size(3), C = m.size(1);
      const auto p = phi_q.to_vector<double>(), mv = m.to_vector<double>();
      std::vector<double> out(rows * C, 0.0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t f = 0; f < F; ++f)
          for (int64_t c = 0; c < C; ++c) out[r * C + c] += p[r * F + f] * mv[f * C + c];
      return Tensor::from_vector(
          out, {phi_q.size(0), phi_q.size(1), phi_q.size(2), static_cast<int64_t>(C)});
    };
    return {product(num_), product(den_)};
  }
  Tensor num_, den_;
};

}  // namespace

TEST_CASE(
    "linear attention: equals explicit loops for every feature map, algorithm, mask and "
    "causality") {
  const int64_t B = 3, H = 2, D = 5, Dv = 3;
  // chunk 2 and 3: causal sums over several chunks, the last one partly padding.
  const std::vector<Kv> algorithms{{{"algorithm", "auto"}},
                                   {{"algorithm", "linear"}},
                                   {{"algorithm", "linear"}, {"chunk", "2"}},
                                   {{"algorithm", "linear"}, {"chunk", "3"}},
                                   {{"algorithm", "quadratic"}}};
  for (const Kv& map : every_map_case())
    for (const Kv& algorithm : algorithms) {
      Kv options = map;
      options.insert(options.end(), algorithm.begin(), algorithm.end());
      const auto attn = test::make_linear(options, H, D, f64, 16);
      for (auto [lq, lk] : {std::pair<int64_t, int64_t>{7, 7}, {5, 9}, {9, 4}}) {
        for (bool causal : {false, true}) {
          for (bool masked : {false, true}) {
            RELPOS_INFO("{} Lq {} Lk {} causal {} masked {}", fmt::join(options, " "), lq, lk,
                        causal, masked);
            const Tensor q = test::random_tensor({B, H, lq, D}, f64, 1);
            const Tensor k = test::random_tensor({B, H, lk, D}, f64, 2);
            const Tensor v = test::random_tensor({B, H, lk, Dv}, f64, 3);
            AttentionInputs in;
            in.causal = causal;
            // Row 2 has every key padded: its queries see nothing and output zeros.
            if (masked) in.key_mask = test::padding_mask(lk, {0, 2, lk});
            const Tensor got = attn->forward(Var(q), Var(k), Var(v), in).value();
            const auto [phi_q, phi_k] = test::naive_feature_map(options, *attn, q, k, in);
            // Sums of at most Lk·F products of O(1) terms in f64: 1e-10 leaves ample room.
            CHECK_CLOSE(got, test::naive_linear_attention(phi_q, phi_k, v, in, 1e-6), 1e-10, 1e-12);
          }
        }
      }
    }
}

TEST_CASE(
    "linear attention: sikf and performer compute the unshifted formula, eps and kernel terms "
    "included, at logits far from 0") {
  // The maps shift their exponents by c_q (per query) and c_k (per head); offsets of q and k move
  // c_q + c_k from about -35 (sums far below eps) through about -16 (sums comparable to eps: where
  // an unscaled eps was visible) to +30 (eps negligible), and c_k from -20 to +15, against
  // which the kernel terms must be weighed. The unshifted loops do not overflow at these sizes.
  const int64_t B = 2, H = 2, D = 4, Dv = 3, lq = 5, lk = 7;
  const std::vector<std::pair<double, double>> offsets{{0, 0},   {-8, -9}, {-7, 3},
                                                       {8, -20}, {15, 15}, {-16, -19}};
  LinearKernelTerms terms(test::random_tensor({D, Dv}, f64, 40),
                          test::random_tensor({D, 1}, f64, 41, 0.1, 1));
  for (const Kv& map :
       {Kv{{"feature_map", "sikf"}}, Kv{{"feature_map", "sikf"}, {"sikf_shift", "mean"}},
        Kv{{"feature_map", "performer"}, {"num_features", "4"}}}) {
    for (const std::string algorithm : {"linear", "chunked", "quadratic"}) {
      const Kv options = algorithm == "chunked"
                             ? with(with(map, "algorithm", "linear"), "chunk", "2")
                             : with(map, "algorithm", algorithm);
      const auto attn = test::make_linear(options, H, D);
      const bool performer = map[0].second == "performer";
      for (auto [q_offset, k_offset] : offsets) {
        // performer's exponent W x^ - |x^|^2 / 2 is quadratic in x: smaller offsets reach the
        // same range.
        const double scale = performer ? 0.35 : 1.0;
        const Tensor q = add_scalar(test::random_tensor({B, H, lq, D}, f64, 42), q_offset * scale);
        const Tensor k = add_scalar(test::random_tensor({B, H, lk, D}, f64, 43), k_offset * scale);
        const Tensor v = test::random_tensor({B, H, lk, Dv}, f64, 44);
        for (bool causal : {false, true}) {
          for (bool with_terms : {false, true}) {
            RELPOS_INFO("{} {} offsets q {} k {} causal {} terms {}", map.back().second, algorithm,
                        q_offset, k_offset, causal, with_terms);
            const AttentionInputs in{test::padding_mask(lk, {0, 2}), causal,
                                     with_terms ? &terms : nullptr};
            const Tensor got = attn->forward(Var(q), Var(k), Var(v), in).value();
            const auto [phi_q, phi_k] = test::naive_feature_map(options, *attn, q, k, in);
            const auto [num, den] = with_terms ? terms.naive(phi_q) : std::pair<Tensor, Tensor>{};
            const Tensor want = test::naive_linear_attention(phi_q, phi_k, v, in, 1e-6, num, den);
            // Relative to the case's largest output (outputs reach 1e-10 where the sums are far
            // below eps): rounding of exp and of the rescaling, ulps times the exponents' size.
            CHECK_CLOSE(got, want, 1e-9, 1e-9 * max(abs(want)).item());
          }
        }
      }
    }
  }
}

TEST_CASE("linear attention: padding keys' values reach neither the output nor the gradients") {
  const int64_t lk = 6;
  const Tensor q = test::random_tensor({2, 2, 5, 4}, f64, 20);
  const Tensor k = test::random_tensor({2, 2, lk, 4}, f64, 21);
  const Tensor v = test::random_tensor({2, 2, lk, 3}, f64, 22);
  const Tensor mask = test::padding_mask(lk, {2, 0});
  // The same inputs with 1000 in every padding row: exp(1000) would overflow were it not masked.
  const Tensor padding = eq(mask, zeros({1}, DType::u8)).reshape({2, 1, lk, 1});
  const Tensor k_big = masked_fill(k, padding, 1000.0), v_big = masked_fill(v, padding, 1000.0);
  for (const Kv& map : every_map_case()) {
    const auto attn = test::make_linear(map, 2, 4, f64, 8);
    for (bool causal : {false, true}) {
      INFO(map[0].second << " causal " << causal);
      const AttentionInputs in{mask, causal, nullptr};
      const Var kv(k_big, true), vv(v_big, true);
      const Var out = attn->forward(Var(q), kv, vv, in);
      sum(out).backward();
      CHECK_CLOSE(out.value(), attn->forward(Var(q), Var(k), Var(v), in).value(), 1e-12, 1e-14);
      CHECK(all_finite(kv.grad()));
      CHECK(all_finite(vv.grad()));
    }
  }
}

TEST_CASE(
    "linear attention: gradcheck (f64) through q, k, v for every feature map, every algorithm") {
  // Lq 5 < Lk 6: causal queries see one memory key before their own; Lq 8 > Lk: the first two see
  // no key. Chunks of 2: the state crosses chunks.
  const Tensor queries[] = {test::random_tensor({2, 2, 5, 4}, f64, 4),
                            test::random_tensor({2, 2, 8, 4}, f64, 23)};
  const Tensor k = test::random_tensor({2, 2, 6, 4}, f64, 5);
  const Tensor v = test::random_tensor({2, 2, 6, 3}, f64, 6);
  // The stabilizers of the exponential maps are constants the result does not depend on (eps
  // included), so their missing gradient is exact.
  for (const Kv& map : every_map_case()) {
    for (const std::string algorithm : {"linear", "chunked", "quadratic"}) {
      const Kv options = algorithm == "chunked"
                             ? with(with(map, "algorithm", "linear"), "chunk", "2")
                             : with(map, "algorithm", algorithm);
      const auto attn = test::make_linear(options, 2, 4, f64, 8);
      for (const Tensor& q : queries) {
        for (bool causal : {false, true}) {
          INFO(map[0].second << " " << map.size() << " options " << algorithm << " Lq " << q.size(2)
                             << " causal " << causal);
          const AttentionInputs in{test::padding_mask(6, {1, 0}), causal, nullptr};
          test::check_grad(
              [&](const std::vector<Var>& x) { return attn->forward(x[0], x[1], x[2], in); },
              {q, k, v});
        }
      }
    }
  }
}

TEST_CASE(
    "linear attention: forward + backward memory grows linearly in N, like fused softmax; naive "
    "softmax's quadratically") {
  const auto peak = [](Attention& attn, int64_t n, bool causal) {
    const Tensor q = test::random_tensor({1, 2, n, 16}, f64, 7);
    const Tensor k = test::random_tensor({1, 2, n, 16}, f64, 8);
    const Tensor v = test::random_tensor({1, 2, n, 16}, f64, 9);
    return test::peak_bytes_of(Device::cpu(), [&] {
      const Var qv(q, true), kv(k, true), vv(v, true);
      sum(attn.forward(qv, kv, vv, AttentionInputs{Tensor(), causal, nullptr})).backward();
    });
  };
  const auto ratio = [&](Attention& attn, bool causal) {
    return static_cast<double>(peak(attn, 1024, causal)) /
           static_cast<double>(peak(attn, 256, causal));
  };
  const auto softmax = make_attention(
      test::attention_options(test::options("attention", {{"type", "softmax"}}), 2, 16));
  const auto naive_softmax = make_attention(test::attention_options(
      test::options("attention", {{"type", "softmax"}, {"fused", "false"}}), 2, 16));
  const auto linear = test::make_linear({{"algorithm", "linear"}}, 2, 16);
  // `auto` must pick the prefix sums too: F Dv N = 16 N <= N^2 at these lengths.
  const auto automatic = test::make_linear({}, 2, 16);
  for (bool causal : {false, true}) {
    // 4x the length: O(N) memory grows 4x (plus a little for the F x Dv state), O(N^2) 16x.
    const double linear_ratio = ratio(*linear, causal), auto_ratio = ratio(*automatic, causal);
    const double softmax_ratio = ratio(*softmax, causal);
    const double naive_ratio = ratio(*naive_softmax, causal);
    INFO("causal " << causal << ": peak ratio 1024 / 256: linear " << linear_ratio << ", auto "
                   << auto_ratio << ", fused softmax " << softmax_ratio << ", naive softmax "
                   << naive_ratio);
    CHECK(linear_ratio < 4.5);
    CHECK(auto_ratio < 4.5);
    CHECK(softmax_ratio < 4.5);
    CHECK(naive_ratio > 8);
  }
}

// A stream in segments, the running sums carried between them (chunks of 2: each segment spans
// several chunks, the last partly padding), equals one pass over the whole stream; sikf's shift
// moves between segments (logits far from 0).
TEST_CASE("linear attention: causal chunks with carried sums equal one pass over the stream") {
  const int64_t B = 2, H = 2, D = 4, Dv = 3, first = 5, second = 4;
  for (const Kv& map : {Kv{{"feature_map", "elu1"}}, Kv{{"feature_map", "sikf"}}}) {
    const auto attn = test::make_linear(with(with(map, "algorithm", "linear"), "chunk", "2"), H, D);
    const Tensor q = test::random_tensor({B, H, first + second, D}, f64, 51, -6, 6);
    const Tensor k = test::random_tensor({B, H, first + second, D}, f64, 52, -6, 6);
    const Tensor v = test::random_tensor({B, H, first + second, Dv}, f64, 53);
    AttentionInputs whole;
    whole.causal = true;
    const Tensor want = attn->forward(Var(q), Var(k), Var(v), whole).value();
    AttentionCarry carry;
    std::vector<Tensor> parts;
    for (const int64_t start : {int64_t{0}, first}) {
      const int64_t end = start == 0 ? first : first + second;
      AttentionInputs in;
      in.causal = true;
      in.carry = &carry;
      const auto rows = [start, end](const Tensor& x) { return x.slice(2, start, end); };
      parts.push_back(attn->forward(Var(rows(q)), Var(rows(k)), Var(rows(v)), in).value());
      carry.in = carry.out;
      carry.out.clear();
    }
    RELPOS_INFO("{}", map[0].second);
    CHECK_CLOSE(cat(parts, 2), want, 1e-10, 1e-12);
  }
}

TEST_CASE("linear attention: positional kernel terms are added to numerator and denominator") {
  const int64_t B = 2, H = 2, D = 4, Dv = 3, lq = 5, lk = 7;
  const Tensor q = test::random_tensor({B, H, lq, D}, f64, 10);
  const Tensor k = test::random_tensor({B, H, lk, D}, f64, 11);
  const Tensor v = test::random_tensor({B, H, lk, Dv}, f64, 12);
  FixedKernelTerms terms(test::random_tensor({B, H, lq, Dv}, f64, 13),
                         test::random_tensor({B, H, lq, 1}, f64, 14, 0.5, 2));
  for (const std::string algorithm : {"linear", "quadratic"}) {
    const Kv options{{"algorithm", algorithm}, {"feature_map", "dpfp"}};
    const auto attn = test::make_linear(options, H, D);
    CHECK(attn->caps().kernelized);
    CHECK_FALSE(attn->caps().forms_scores);
    for (bool causal : {false, true}) {
      INFO(algorithm << " causal " << causal);
      const AttentionInputs in{test::padding_mask(lk, {0, 3}), causal, &terms};
      const Tensor got = attn->forward(Var(q), Var(k), Var(v), in).value();
      const auto [phi_q, phi_k] = test::naive_feature_map(options, *attn, q, k, in);
      CHECK_CLOSE(terms.seen_phi_q, phi_q, 1e-12, 1e-14);
      CHECK_CLOSE(got,
                  test::naive_linear_attention(phi_q, phi_k, v, in, 1e-6, terms.num_, terms.den_),
                  1e-10, 1e-12);
    }
  }
  FixedKernelTerms half(terms.num_, Tensor());
  const AttentionInputs in{Tensor(), false, &half};
  CHECK(test::error_of([&] { test::make_linear({}, H, D)->forward(Var(q), Var(k), Var(v), in); }) ==
        "[attention linear] positional 'test_kernel_terms' gave one kernel term without the "
        "other");
}

TEST_CASE("linear attention: bad options and shapes are refused by message") {
  const auto err = [](const Kv& kv, int64_t head_dim = 4) {
    return test::error_of([&] { test::make_linear(kv, 2, head_dim); });
  };
  CHECK(err({{"feature_map", "elu"}}) ==
        fmt::format("[feature_map] unknown feature_map 'elu'; known: {}",
                    fmt::join(feature_map_registry().names(), ", ")));
  CHECK(err({{"feature_map", "dpfp"}, {"nu", "8"}}) ==
        "[feature_map dpfp] nu must be in [1, 2 * head_dim) = [1, 8), got 8");
  CHECK(err({{"feature_map", "dpfp"}, {"nu", "0"}}) ==
        "[feature_map dpfp] nu must be in [1, 2 * head_dim) = [1, 8), got 0");
  CHECK(err({{"eps", "0"}}) == "[attention linear] eps must be > 0, got 0");
  CHECK(err({{"algorithm", "fast"}}) ==
        "[attention linear] algorithm must be auto, linear or quadratic, got 'fast'");
  CHECK(err({{"feature_map", "relu"}, {"relu_eps", "-1"}}) ==
        "[feature_map relu] relu_eps must be >= 0, got -1");
  CHECK(err({{"feature_map", "sikf"}, {"sikf_shift", "min"}}) ==
        "[feature_map sikf] sikf_shift must be max or mean, got 'min'");
  CHECK(err({{"feature_map", "performer"}, {"num_features", "0"}}) ==
        "[attention] num_features must be >= 1, got 0");
  CHECK(err({{"feature_map", "performer"}, {"redraw_interval", "-1"}}) ==
        "[feature_map performer] redraw_interval must be >= 0 (0: never), got -1");
  // An option of another map is unknown to this one.
  CHECK(err({{"feature_map", "elu1"}, {"nu", "2"}}).find("unknown option 'nu'") !=
        std::string::npos);
  const auto dpfp = test::make_linear({{"feature_map", "dpfp"}}, 2, 4);
  const Tensor x = test::random_tensor({1, 2, 3, 5}, f64, 15);
  CHECK(test::error_of([&] { dpfp->forward(Var(x), Var(x), Var(x), {}); }) ==
        "[feature_map dpfp] built for head_dim 4, got 5");
  const Tensor v = test::random_tensor({1, 2, 4, 5}, f64, 16);
  CHECK(test::error_of([&] { dpfp->forward(Var(x), Var(x), Var(v), {}); })
            .find("[attention linear] q [B, H, Lq, D], k [B, H, Lk, D] and v [B, H, Lk, Dv] "
                  "disagree") != std::string::npos);
}

TEST_CASE("linear attention: CUDA matches CPU for every feature map (same performer W on both)") {
  // Small magnitudes keep f32 sums within rtol 1e-5 whatever order each device adds in.
  const Tensor q = test::random_tensor({2, 2, 33, 5}, DType::f32, 17, -0.5, 0.5);
  const Tensor k = test::random_tensor({2, 2, 40, 5}, DType::f32, 18, -0.5, 0.5);
  const Tensor v = test::random_tensor({2, 2, 40, 3}, DType::f32, 19, -0.5, 0.5);
  const Tensor mask = test::padding_mask(40, {3, 0});
  for (const Kv& map : every_map_case()) {
    const auto linear = test::make_linear(with(map, "algorithm", "linear"), 2, 5, DType::f32, 40);
    const auto quadratic =
        test::make_linear(with(map, "algorithm", "quadratic"), 2, 5, DType::f32, 40);
    test::check_cuda_matches_cpu(
        "linear attention, " + map[0].second,
        [&](const std::vector<Tensor>& x) {
          std::vector<Tensor> out;
          for (Attention* attn : {linear.get(), quadratic.get()})
            for (bool causal : {false, true})
              out.push_back(attn->forward(Var(x[0]), Var(x[1]), Var(x[2]),
                                          AttentionInputs{x[3], causal, nullptr})
                                .value());
          return out;
        },
        {q, k, v, mask});
  }
}
