// The fused attention op on bf16 operands (core/ops.h attention; autograd/autocast.h): the output
// and every gradient against the f64 op on the same (rounded) values within bf16's rounding, over
// padding x causal x dropout and the position term's placements, at logits in the hundreds; on the
// CPU the f32 kernels' results rounded once, bit for bit; lse in f32; under a bf16 autocast scope
// f32 operands are rounded and the results return to f32; mixed dtypes are refused by name.
#include <algorithm>
#include <cmath>

#include "autograd/autocast.h"
#include "core/philox.h"
#include "tests/attention_cases.h"
#include "tests/autograd/grad_checks.h"

using namespace relpos;

namespace {

// The inputs of one case: q, k, v and, with a placement, rel_query and rel_key (f32 values that
// bf16 holds exactly), and the spec.
struct Case {
  std::vector<Tensor> x;
  AttentionSpec spec;
};

Tensor rounded(const Shape& shape, uint64_t seed, double range) {
  return cast(cast(test::random_tensor(shape, DType::f32, seed, -range, range), DType::bf16),
              DType::f32);
}

Case make_case(int64_t batch, int64_t heads, int64_t q_len, int64_t k_len, int64_t dim,
               const test::RelPlacement& rel, int64_t window, bool padding, double dropout,
               double range) {
  Case c;
  c.x = {rounded({batch, heads, q_len, dim}, 1, range),
         rounded({batch, heads, k_len, dim}, 2, range),
         rounded({batch, heads, k_len, dim + 3}, 3, 1)};
  if (rel.tables > 0)
    c.x.insert(c.x.end(), {rounded({batch, heads, q_len, rel.dim}, 4, range),
                           rounded({rel.tables, rel.max - rel.min + 1, rel.dim}, 5, range)});
  AttentionSpec& s = c.spec;
  s.scale = 1 / std::sqrt(static_cast<double>(dim));
  if (padding) s.key_mask = test::attention_padding_mask(batch, k_len, 7);
  s.causal = window >= 0;
  s.window = std::max<int64_t>(window, 0);
  s.dropout = dropout;
  s.seed = 11;
  s.rel_offset = rel.offset, s.rel_min = rel.min, s.rel_max = rel.max;
  return c;
}

std::vector<Tensor> in_dtype(const std::vector<Tensor>& x, DType dtype) {
  std::vector<Tensor> out;
  for (const Tensor& t : x) out.push_back(cast(t, dtype));
  return out;
}

// {out, lse, dq, dk, dv[, d rel_query, d rel_key]} of the op on x (in x's dtype) from gradient g;
// the backward reads `saved` instead of the output when given (D = dO·O uses the output the
// forward kept).
std::vector<Tensor> forward_backward(const std::vector<Tensor>& x, AttentionSpec spec,
                                     const Tensor& g, const Tensor& saved = Tensor()) {
  if (x.size() == 5) spec.rel_query = x[3], spec.rel_key = x[4];
  AttentionResult r = attention(x[0], x[1], x[2], spec);
  if (saved.defined()) r.out = cast(saved, r.out.dtype());
  const AttentionGrads d = attention_backward(cast(g, x[0].dtype()), x[0], x[1], x[2], r, spec);
  std::vector<Tensor> out{r.out, r.lse, d.dq, d.dk, d.dv};
  if (x.size() == 5) out.insert(out.end(), {d.drel_query, d.drel_key});
  return out;
}

const std::vector<const char*> kNames = {"out", "lse",         "dq",       "dk",
                                         "dv",  "d rel_query", "d rel_key"};

// |actual - expected| <= frac (|expected| + max |expected|): bf16's rounding of each result (2^-9
// relative) and of the values an f32 sum adds up.
void check_within_bf16(const Tensor& actual, const Tensor& expected, double frac) {
  const Tensor e = cast(expected, DType::f64);
  const std::vector<double> values = e.to_vector<double>();
  double largest = 0;
  for (const double v : values)
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  CHECK_CLOSE(cast(actual, DType::f64), e, frac, frac * largest);
}

void check_case(const Case& c, Device device) {
  const Shape out_shape{c.x[0].size(0), c.x[0].size(1), c.x[0].size(2), c.x[2].size(3)};
  const Tensor g = rounded(out_shape, 9, 1);
  AttentionSpec spec = c.spec;
  if (spec.key_mask.defined()) spec.key_mask = spec.key_mask.to(device);
  std::vector<Tensor> x16;
  for (const Tensor& t : in_dtype(c.x, DType::bf16)) x16.push_back(t.to(device));
  const std::vector<Tensor> got = forward_backward(x16, spec, g.to(device));
  // The reference's backward reads the bf16 output the op kept. The gradients hang on it: where a
  // row's weight sits on one key (logits in the hundreds) dS = P (dP keep - dO·O) cancels to
  // O's rounding, and O's last bit differs between the f64 reference and the tensor cores,
  // whose weights P̃ are bf16 operands (on an H200 that moved dk by 3% of its largest value).
  const Tensor saved = got[0].to(Device::cpu());
  const std::vector<Tensor> want = forward_backward(in_dtype(c.x, DType::f64), c.spec, g, saved);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(std::string(kNames[i]));
    CHECK(got[i].dtype() == (i == 1 ? DType::f32 : DType::bf16));
    check_within_bf16(got[i].to(Device::cpu()), want[i], i == 1 ? 1e-5 : 2e-2);
  }
  if (!device.is_cpu()) return;
  // The CPU runs the f32 kernels on the values and rounds each result once.
  const std::vector<Tensor> f32 = forward_backward(c.x, c.spec, g, saved);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(std::string(kNames[i]));
    CHECK(test::same_bits(got[i], i == 1 ? f32[i] : cast(f32[i], DType::bf16)));
  }
}

// Every mask and placement at sizes on both sides of the tiles, head sizes up to 64.
void check_all_cases(Device device) {
  struct Sizes {
    int64_t batch, heads, q_len, k_len, dim;
  };
  for (const Sizes& s :
       {Sizes{2, 2, 37, 37, 5}, Sizes{1, 2, 70, 131, 64}, Sizes{2, 1, 130, 45, 32}}) {
    std::vector<std::pair<test::RelPlacement, int64_t>> placements = {{{}, -1}, {{}, 0}, {{}, 17}};
    for (const auto& p : test::rel_placements(s.q_len, s.k_len, s.heads, s.dim))
      placements.push_back(p);
    for (const auto& [rel, window] : placements)
      for (const bool padding : {false, true})
        for (const double range : {1.0, 8.0}) {
          const double dropout = padding ? 0.25 : 0;
          RELPOS_INFO(
              "B {} H {} Lq {} Lk {} D {}, rel rows [{}, {}] x {}, window {}, padding {}, "
              "range {}",
              s.batch, s.heads, s.q_len, s.k_len, s.dim, rel.min, rel.max, rel.tables, window,
              padding, range);
          check_case(make_case(s.batch, s.heads, s.q_len, s.k_len, s.dim, rel, window, padding,
                               dropout, range),
                     device);
        }
  }
}

}  // namespace

TEST_CASE("attention bf16: results within bf16 rounding of f64, every mask and placement") {
  check_all_cases(Device::cpu());
}

TEST_CASE("attention bf16 on CUDA: results within bf16 rounding of f64") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): attention bf16 on CUDA");
    return;
  }
  check_all_cases(Device::cuda(0));
}

TEST_CASE("attention bf16: an autocast scope rounds f32 operands and returns f32 results") {
  const Case c =
      make_case(2, 2, 29, 40, 6, test::rel_placements(29, 40, 2, 5)[0].first, 0, true, 0.2, 4.0);
  const std::vector<Tensor> x = {test::random_tensor(c.x[0].shape(), DType::f32, 21, -3, 3),
                                 test::random_tensor(c.x[1].shape(), DType::f32, 22, -3, 3),
                                 test::random_tensor(c.x[2].shape(), DType::f32, 23),
                                 test::random_tensor(c.x[3].shape(), DType::f32, 24),
                                 test::random_tensor(c.x[4].shape(), DType::f32, 25)};
  const Tensor g = test::random_tensor({2, 2, 29, 9}, DType::f32, 26);
  std::vector<Var> v;
  for (const Tensor& t : x) v.emplace_back(t, true);
  Var y;
  {
    const AutocastGuard guard(DType::bf16);
    Generator gen(3);
    y = attention(v[0], v[1], v[2], v[3], v[4], c.spec, gen, true);
  }
  y.backward(g);
  // The op on the rounded operands (the dropout stream Generator(3) drew), widened exactly.
  AttentionSpec spec = c.spec;
  Generator gen(3);
  spec.seed = gen.seed();
  spec.offset = gen.reserve(philox::blocks_for_uniform(2 * 2 * 29 * 40));
  const std::vector<Tensor> want = forward_backward(in_dtype(x, DType::bf16), spec, g);
  CHECK(y.value().dtype() == DType::f32);
  CHECK(test::same_bits(y.value(), cast(want[0], DType::f32)));
  for (size_t i = 0; i < v.size(); ++i) {
    INFO(std::string(kNames[i + 2]));
    CHECK(v[i].grad().dtype() == DType::f32);
    CHECK(test::same_bits(v[i].grad(), cast(want[i + 2], DType::f32)));
  }
  // Outside the scope nothing is rounded: the f32 op itself.
  Generator again(3);
  const Var plain =
      attention(Var(x[0]), Var(x[1]), Var(x[2]), Var(x[3]), Var(x[4]), c.spec, again, true);
  AttentionSpec s32 = spec;
  s32.rel_query = x[3], s32.rel_key = x[4];
  CHECK(test::same_bits(plain.value(), attention(x[0], x[1], x[2], s32).out));
}

TEST_CASE("attention bf16: mixed dtypes and an lse of the wrong dtype are refused by name") {
  const Tensor q = zeros({1, 2, 4, 3}, DType::bf16), k = zeros({1, 2, 5, 3}, DType::bf16),
               v = zeros({1, 2, 5, 6}, DType::bf16);
  const AttentionSpec spec;
  CHECK(test::error_of([&] { attention(q, cast(k, DType::f32), v, spec); }).find("dtype") !=
        std::string::npos);
  CHECK(test::error_of([&] {
          attention(zeros({1, 2, 4, 3}, DType::i64), zeros({1, 2, 5, 3}, DType::i64),
                    zeros({1, 2, 5, 6}, DType::i64), spec);
        }).find("[attention] expects f32, f64 or bf16 tensors, got q i64[1, 2, 4, 3]") == 0);
  AttentionResult r = attention(q, k, v, spec);
  CHECK(r.out.dtype() == DType::bf16);
  CHECK(r.lse.dtype() == DType::f32);
  const Tensor g = zeros({1, 2, 4, 6}, DType::bf16);
  CHECK_NOTHROW(attention_backward(g, q, k, v, r, spec));
  r.lse = cast(r.lse, DType::bf16);
  CHECK(test::error_of([&] {
          attention_backward(g, q, k, v, r, spec);
        }).find("[attention] lse must be f32 for bf16 operands, got bf16[1, 2, 4]") == 0);
  AttentionSpec position = spec;
  position.rel_query = zeros({1, 2, 4, 7});  // f32 beside bf16 q
  position.rel_key = zeros({1, 5, 7});
  position.rel_max = 4;
  CHECK(test::error_of([&] { attention(q, k, v, position); }).find("dtype") != std::string::npos);
}
