// The CUDA backend's two attention paths on the CPU: its tiled kernels
// (core/cuda/attention_launches.cuh) compiled as host C++ and run by the emulator (emulator.h)
// through the same dispatch and launch order as on a GPU, and its composed form
// (core/ops/attention_composed.h), each against the CPU kernel, which
// tests/autograd/test_grad_attention.cpp holds to the naive formula: output, log-sum-exp and every
// input gradient, with and without the position term (Transformer-XL's per-head table, Shaw's
// clipped distances, skew's every distance), over padding x causal x window x dropout, at sizes on
// both sides of the 64-row tiles, Lq != Lk both ways, and logits large enough to stress the running
// maximum; and the bf16 kernels (tensor cores, mma.sync) to bf16's precision. It runs on every
// machine, so the kernels' index arithmetic is tested where no GPU is; on a GPU,
// tests/autograd/test_attention_cuda.cpp and test_attention_bf16.cpp compare the compiled kernels.
#include <cmath>

#include "core/cuda/attention_launches.cuh"
#include "core/ops/attention_composed.h"
#include "emulated_attention.h"
#include "emulator.h"
#include "tests/attention_cases.h"
#include "tests/harness.h"

namespace relpos::cuda::attention_tiles {
alignas(128) unsigned char smem[cuda_emulation::kMaxSharedBytes];
}  // namespace relpos::cuda::attention_tiles

using namespace relpos;

namespace {

using cuda::AttentionArgs;
using cuda::AttentionGradBuffers;

// The emulated kernels of the inputs' element type (emulated_attention.h).
cudaError_t forward_of(DType dtype, const AttentionArgs& a, const void* q, const void* k,
                       const void* v, void* out, void* lse) {
  if (dtype == DType::f64) return cuda_emulation::attention_forward<double>(a, q, k, v, out, lse);
  if (dtype == DType::f32) return cuda_emulation::attention_forward<float>(a, q, k, v, out, lse);
  return cuda_emulation::attention_forward<bf16>(a, q, k, v, out, lse);
}

cudaError_t backward_of(DType dtype, const AttentionArgs& a, const void* q, const void* k,
                        const void* v, const void* gout, const void* lse, const void* row_dot,
                        const AttentionGradBuffers& g) {
  if (dtype == DType::f64)
    return cuda_emulation::attention_backward<double>(a, q, k, v, gout, lse, row_dot, g);
  if (dtype == DType::f32)
    return cuda_emulation::attention_backward<float>(a, q, k, v, gout, lse, row_dot, g);
  return cuda_emulation::attention_backward<bf16>(a, q, k, v, gout, lse, row_dot, g);
}

struct Sizes {
  int64_t batch, heads, q_len, k_len, dim, value_dim;
};

struct Inputs {
  Tensor q, k, v, gout, rel_query, rel_key;
  AttentionSpec spec;
};

Inputs make_inputs(const Sizes& s, DType dtype, bool padding, int64_t window, double dropout,
                   const test::RelPlacement& t, double range) {
  Inputs in;
  const DType drawn = dtype == DType::bf16 ? DType::f32 : dtype;  // bf16: rounded from f32
  const auto input = [&](const Shape& shape, uint64_t seed, double bound) {
    return cast(test::random_tensor(shape, drawn, seed, -bound, bound), dtype);
  };
  in.q = input({s.batch, s.heads, s.q_len, s.dim}, 1, range);
  in.k = input({s.batch, s.heads, s.k_len, s.dim}, 2, range);
  in.v = input({s.batch, s.heads, s.k_len, s.value_dim}, 3, 1);
  in.gout = input({s.batch, s.heads, s.q_len, s.value_dim}, 4, 1);
  AttentionSpec& spec = in.spec;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(s.dim));
  spec.causal = window >= 0;
  spec.window = std::max<int64_t>(window, 0);
  spec.dropout = dropout;
  spec.seed = 99;
  spec.offset = 7;
  if (padding) spec.key_mask = test::attention_padding_mask(s.batch, s.k_len, 5);
  if (t.tables > 0) {
    spec.rel_query = in.rel_query = input({s.batch, s.heads, s.q_len, t.dim}, 6, range);
    spec.rel_key = in.rel_key = input({t.tables, t.max - t.min + 1, t.dim}, 7, range);
    spec.rel_offset = t.offset;
    spec.rel_min = t.min;
    spec.rel_max = t.max;
  }
  return in;
}

// What core/cuda/attention.cpp hands the launchers.
AttentionArgs args_of(const Inputs& in) {
  AttentionArgs a;
  a.batch = in.q.size(0);
  a.heads = in.q.size(1);
  a.q_len = in.q.size(2);
  a.k_len = in.k.size(2);
  a.dim = static_cast<int>(in.q.size(3));
  a.value_dim = static_cast<int>(in.v.size(3));
  a.scale = in.spec.scale;
  a.key_mask = in.spec.key_mask.defined() ? in.spec.key_mask.data<uint8_t>() : nullptr;
  a.causal = in.spec.causal;
  a.window = in.spec.window;
  a.dropout = in.spec.dropout;
  a.seed = in.spec.seed;
  a.offset = in.spec.offset;
  if (in.rel_query.defined()) {
    a.rel_dim = static_cast<int>(in.rel_query.size(3));
    a.rel_query = in.rel_query.raw_data();
    a.rel_key = in.rel_key.raw_data();
    a.rel_one_table = in.rel_key.size(0) == 1;
    a.rel_offset = in.spec.rel_offset;
    a.rel_min = in.spec.rel_min;
    a.rel_max = in.spec.rel_max;
  }
  return a;
}

// {out, lse, dq, dk, dv[, d rel_query, d rel_key]} of the emulated kernels, with the buffers and
// the steps core/cuda/attention.cpp and core/ops/attention.cpp give them.
std::vector<Tensor> emulated(const Inputs& in) {
  const AttentionArgs a = args_of(in);
  const DType dtype = in.q.dtype();
  const DType compute = dtype == DType::bf16 ? DType::f32 : dtype;
  const bool position = in.rel_query.defined();
  const Tensor out = Tensor::empty(in.gout.shape(), dtype);
  const Tensor lse = Tensor::empty({a.batch, a.heads, a.q_len}, compute);
  REQUIRE(forward_of(dtype, a, in.q.raw_data(), in.k.raw_data(), in.v.raw_data(), out.raw_data(),
                     lse.raw_data()) == cudaSuccess);
  const Tensor row_dot = sum(mul(cast(in.gout, compute), cast(out, compute)), {-1});
  std::vector<Tensor> r = {out, lse, Tensor::empty(in.q.shape(), dtype),
                           Tensor::empty(in.k.shape(), dtype), Tensor::empty(in.v.shape(), dtype)};
  AttentionGradBuffers g{r[2].raw_data(), r[3].raw_data(), r[4].raw_data()};
  Tensor scratch, d_rel_key;
  if (position) {
    r.push_back(Tensor::empty(in.rel_query.shape(), dtype));
    d_rel_key = Tensor::empty({a.batch, a.heads, in.rel_key.size(1), a.rel_dim}, compute);
    scratch = Tensor::empty({cuda::tiled_attention::rel_key_scratch_of(a)}, compute);
    g.d_rel_query = r[5].raw_data();
    g.d_rel_key = d_rel_key.raw_data();
    g.scratch = scratch.raw_data();
  }
  REQUIRE(backward_of(dtype, a, in.q.raw_data(), in.k.raw_data(), in.v.raw_data(),
                      in.gout.raw_data(), lse.raw_data(), row_dot.raw_data(), g) == cudaSuccess);
  if (position)  // as core/ops/attention.cpp: each example's part summed
    r.push_back(
        cast(in.rel_key.size(0) == 1 ? sum(d_rel_key, {0, 1}).unsqueeze(0) : sum(d_rel_key, {0}),
             dtype));
  return r;
}

// The same from the composed form, CUDA's path where the tiles do not fit, here on the CPU.
std::vector<Tensor> composed_form(const Inputs& in) {
  const DType dtype = in.q.dtype();
  const Shape lse_shape{in.q.size(0), in.q.size(1), in.q.size(2)};
  std::vector<Tensor> r = {Tensor::empty(in.gout.shape(), dtype), Tensor::empty(lse_shape, dtype)};
  composed::attention(in.q, in.k, in.v, in.spec, r[0], r[1]);
  AttentionGrads g{Tensor::empty(in.q.shape(), dtype), Tensor::empty(in.k.shape(), dtype),
                   Tensor::empty(in.v.shape(), dtype), Tensor(), Tensor()};
  if (in.rel_query.defined()) {
    g.drel_query = Tensor::empty(in.rel_query.shape(), dtype);
    g.drel_key =
        Tensor::empty({in.q.size(0), in.q.size(1), in.rel_key.size(1), in.rel_key.size(2)}, dtype);
  }
  composed::attention_backward(in.gout, in.q, in.k, in.v, r[0], r[1], in.spec, g);
  for (const Tensor& t : {g.dq, g.dk, g.dv}) r.push_back(t);
  if (in.rel_query.defined()) {
    r.push_back(g.drel_query);
    r.push_back(in.rel_key.size(0) == 1 ? sum(g.drel_key, {0, 1}).unsqueeze(0)
                                        : sum(g.drel_key, {0}));
  }
  return r;
}

// The same from the CPU kernel.
std::vector<Tensor> on_cpu(const Inputs& in) {
  const AttentionResult f = attention(in.q, in.k, in.v, in.spec);
  const AttentionGrads g = attention_backward(in.gout, in.q, in.k, in.v, f, in.spec);
  std::vector<Tensor> r = {f.out, f.lse, g.dq, g.dk, g.dv};
  if (in.rel_query.defined()) {
    r.push_back(g.drel_query);
    r.push_back(g.drel_key);
  }
  return r;
}

using Path = std::vector<Tensor> (*)(const Inputs&);

void check_matches_cpu(const Sizes& s, DType dtype, bool padding, int64_t window, double dropout,
                       const test::RelPlacement& t, double range, Path path = emulated) {
  RELPOS_INFO(
      "{} {} B {} H {} Lq {} Lk {} D {} Dv {}, padding {}, window {} (-1: not causal), dropout "
      "{}, inputs in ±{}, position term: offset {} rows [{}, {}] x {} tables of width {}",
      path == emulated ? "emulated kernels" : "composed form", dtype_name(dtype), s.batch, s.heads,
      s.q_len, s.k_len, s.dim, s.value_dim, padding, window, dropout, range, t.offset, t.min, t.max,
      t.tables, t.dim);
  const Inputs in = make_inputs(s, dtype, padding, window, dropout, t, range);
  const std::vector<Tensor> got = path(in), want = on_cpu(in);
  const char* names[] = {"out", "lse", "dq", "dk", "dv", "d rel_query", "d rel_key"};
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(names[i]);
    REQUIRE(got[i].dtype() == want[i].dtype());
    if (dtype != DType::bf16) {
      const double tol = dtype == DType::f64 ? 1e-10 : 2e-5;
      CHECK_CLOSE(got[i], want[i], tol, tol / 10);
      continue;
    }
    // bf16: the tensor cores' products round P̃ and dS to bf16 where the CPU's f32 kernels do
    // not: agreement to bf16's precision, relative to the result's largest value.
    const Tensor w = cast(want[i], DType::f64);
    double largest = 0;
    for (const double x : w.to_vector<double>())
      if (std::isfinite(x)) largest = std::max(largest, std::abs(x));
    CHECK_CLOSE(cast(got[i], DType::f64), w, 1e-2, 1e-2 * largest);
  }
}

std::vector<std::pair<test::RelPlacement, int64_t>> placements(const Sizes& s, int64_t rel_dim) {
  return test::rel_placements(s.q_len, s.k_len, s.heads, rel_dim);
}

}  // namespace

TEST_CASE("CUDA attention kernels, emulated, equal the CPU kernel: no position term") {
  const std::vector<Sizes> sizes = {
      {2, 3, 37, 37, 5, 7}, {1, 2, 70, 150, 4, 3}, {2, 1, 130, 45, 6, 2}, {1, 1, 65, 66, 64, 33}};
  for (const Sizes& s : sizes)
    for (const bool padding : {false, true})
      for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{17}})
        check_matches_cpu(s, DType::f64, padding, window, padding ? 0.3 : 0.0, {}, 12.0);
  check_matches_cpu({1, 2, 100, 100, 100, 128}, DType::f32, true, 0, 0.2, {}, 1.0);
}

TEST_CASE("CUDA attention kernels, emulated, equal the CPU kernel: the position term, f64") {
  const std::vector<Sizes> sizes = {{1, 1, 1, 1, 1, 1},
                                    {2, 3, 37, 37, 5, 7},
                                    {1, 2, 70, 150, 4, 3},
                                    {2, 1, 130, 200, 6, 2},
                                    {1, 2, 129, 129, 8, 8}};
  for (const Sizes& s : sizes)
    for (const auto& [term, window] : placements(s, s.dim + 2))
      for (const bool padding : {false, true}) {
        check_matches_cpu(s, DType::f64, padding, window, padding ? 0.3 : 0.0, term, 1.0);
        check_matches_cpu(s, DType::f64, padding, window, 0.0,
                          {term.offset, term.min, term.max, term.tables, 3},
                          8.0);  // logits in the hundreds
      }
}

TEST_CASE("CUDA attention kernels, emulated, equal the CPU kernel: the position term, f32") {
  // Transformer-XL base's head size (64) and a narrower one; memory before the segment.
  for (const auto& [term, window] : placements({1, 2, 96, 160, 64, 64}, 64))
    check_matches_cpu({1, 2, 96, 160, 64, 64}, DType::f32, false, window, 0.1, term, 1.0);
  for (const auto& [term, window] : placements({2, 1, 70, 70, 20, 30}, 32))
    check_matches_cpu({2, 1, 70, 70, 20, 30}, DType::f32, true, window, 0.0, term, 1.0);
}

TEST_CASE("CUDA attention kernels, emulated, equal the CPU kernel: Transformer-XL base's shape") {
  // A 512-token segment over 512 tokens of memory, heads of 64, dropout 0.1; one head; f32 and
  // bf16 (the tensor cores).
  const Sizes s{1, 1, 512, 1024, 64, 64};
  check_matches_cpu(s, DType::f32, false, 0, 0.1, {512, 0, 1023, 1, 64}, 1.0);
  check_matches_cpu(s, DType::bf16, false, 0, 0.1, {512, 0, 1023, 1, 64}, 1.0);
}

TEST_CASE("CUDA's composed attention (where the tiles do not fit) equals the CPU kernel, f64") {
  const std::vector<Sizes> sizes = {
      {1, 1, 1, 1, 1, 1}, {2, 3, 37, 37, 5, 7}, {2, 1, 70, 130, 6, 2}};
  for (const Sizes& s : sizes) {
    for (const bool padding : {false, true})
      for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{17}})
        check_matches_cpu(s, DType::f64, padding, window, padding ? 0.3 : 0.0, {}, 12.0,
                          composed_form);
    for (const auto& [term, window] : placements(s, s.dim + 2))
      for (const bool padding : {false, true})
        check_matches_cpu(s, DType::f64, padding, window, padding ? 0.3 : 0.0, term, 4.0,
                          composed_form);
  }
}

TEST_CASE("CUDA attention kernels: the instantiations' shared memory fits a block") {
  using namespace cuda::tiled_attention;
  const auto fits = [](size_t bytes) { return bytes <= cuda_emulation::kMaxSharedBytes; };
  const auto all_fit = [&]<typename S, int kDim, bool kRel>() {
    CHECK(fits(forward_bytes<S, kDim, kRel>()));
    CHECK(fits(key_grad_bytes<S, kDim, kRel>()));
    CHECK(fits(query_grad_bytes<S, kDim, kRel>()));
    if constexpr (kRel) CHECK(fits(rel_key_band_bytes<S, kDim>()));
  };
  all_fit.operator()<double, 32, true>();
  all_fit.operator()<double, 64, false>();
  all_fit.operator()<float, 64, true>();
  all_fit.operator()<float, 128, false>();
  all_fit.operator()<bf16, 64, true>();
  all_fit.operator()<bf16, 64, false>();
}

TEST_CASE("CUDA attention kernels, emulated, on bf16 (tensor cores) agree with the CPU op") {
  // Head sizes of both instantiations (32, 64), odd sizes both sides of the tiles, Lq != Lk, every
  // placement of the position term, padding x dropout, logits in the tens.
  for (const Sizes& s : {Sizes{2, 1, 70, 131, 20, 30}, Sizes{1, 2, 96, 160, 64, 64}}) {
    for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{17}})
      check_matches_cpu(s, DType::bf16, window != 0, window, window != 0 ? 0.2 : 0.0, {}, 3.0);
    for (const auto& [term, window] : placements(s, s.dim))
      for (const bool padding : {false, true})
        check_matches_cpu(s, DType::bf16, padding, window, padding ? 0.2 : 0.0, term, 2.0);
  }
}
