// CPU≡CUDA for every differentiable function of autograd/functions.h: the same inputs run forward
// and backward (from the same fixed output gradient) on both devices, and the output value and
// every input gradient must agree. One data-driven table, swept in f32 and in f64. Without a GPU
// each check prints "SKIPPED (no CUDA device)"; the CPU half still runs (outputs defined, finite).
#include <cstdint>
#include <string>

#include "tests/autograd/grad_checks.h"

using namespace relpos;

namespace {

using Fn = std::function<Var(const std::vector<Var>&)>;

struct Case {
  std::string name;
  Fn f;                        // floating inputs arrive as Vars requiring grad, others as constants
  std::vector<Tensor> inputs;  // on the CPU; the harness moves them to cuda:0
  bool loose = false;          // f32 only: 1e-4 instead of 1e-5 (see kTolF32Loose)
};

// f32: CPU and CUDA kernels differ in transcendental implementations (a few ulp, ~1e-7 relative)
// and in summation order (the CPU accumulates f32 sums in f64, CUDA in f32 trees); at these odd,
// small sizes (<= 105 terms of O(1) values) both stay well under 1e-5. TF32 is off by default.
constexpr double kTolF32 = 1e-5;
// matmul/bmm (cuBLAS vs CPU GEMM blocking and FMA order), rfft/irfft (cuFFT vs the CPU transform:
// different twiddle rounding and butterfly order) and layer_norm (x - mean over a row, then
// scaled by rstd = 1/std, amplifies the differing rounding of mean/var by 1/std; dweight/dbias
// sum over every row): rounding differs by more than a few ulp, so 1e-4.
constexpr double kTolF32Loose = 1e-4;
// f64: the same differences, at ~1e-16 per operation.
constexpr double kTolF64 = 1e-10;

const Shape kS{3, 5, 7};

// Seeded inputs of one floating dtype; every call draws from a new seed.
struct Inputs {
  DType dt;
  uint64_t seed = 100;
  Tensor r(const Shape& s, double lo = -1, double hi = 1) {
    return test::random_tensor(s, dt, seed++, lo, hi);
  }
  // |x| in [0.1, 1.5) with a random sign: away from the kinks of relu, abs and elu at 0.
  Tensor away0(const Shape& s) {
    const Tensor sign = add_scalar(mul_scalar(cast(test::random_indices(s, 2, seed++), dt), 2), -1);
    return mul(r(s, 0.1, 1.5), sign);
  }
  Tensor idx(const Shape& s, int64_t bound) { return test::random_indices(s, bound, seed++); }
  Tensor mask(const Shape& s) { return test::random_indices(s, 2, seed++, DType::u8); }
};

Tensor ids(const std::vector<int64_t>& v) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

std::vector<Case> make_cases(DType dt) {
  Inputs in{dt};
  const DType other = dt == DType::f32 ? DType::f64 : DType::f32;
  const auto unary = [](Var (*fn)(const Var&)) {
    return [fn](const std::vector<Var>& v) { return fn(v[0]); };
  };
  std::vector<Case> c;
  // ---- pointwise
  c.push_back({"neg", unary(neg), {in.r(kS, -2, 2)}});
  c.push_back({"exp", unary(exp), {in.r(kS, -2, 2)}});
  c.push_back({"log", unary(log), {in.r(kS, 0.5, 2)}});
  c.push_back({"sqrt", unary(sqrt), {in.r(kS, 0.5, 2)}});
  c.push_back({"rsqrt", unary(rsqrt), {in.r(kS, 0.5, 2)}});
  c.push_back({"tanh", unary(tanh), {in.r(kS, -2, 2)}});
  c.push_back({"sin", unary(sin), {in.r(kS, -4, 4)}});
  c.push_back({"cos", unary(cos), {in.r(kS, -4, 4)}});
  c.push_back({"sigmoid", unary(sigmoid), {in.r(kS, -3, 3)}});
  c.push_back({"relu", unary(relu), {in.away0(kS)}});
  c.push_back({"elu", [](auto& v) { return elu(v[0], 0.7); }, {in.away0(kS)}});
  c.push_back({"gelu", unary(gelu), {in.r(kS, -3, 3)}});
  c.push_back({"abs", unary(abs), {in.away0(kS)}});
  c.push_back({"pow", [](auto& v) { return pow(v[0], 2.5); }, {in.r(kS, 0.5, 2)}});
  c.push_back({"add_scalar", [](auto& v) { return add_scalar(v[0], 1.25); }, {in.r(kS)}});
  c.push_back({"mul_scalar", [](auto& v) { return mul_scalar(v[0], -0.75); }, {in.r(kS)}});
  // ---- binary, broadcasting (b's gradient is reduced back to its shape)
  c.push_back({"add", [](auto& v) { return add(v[0], v[1]); }, {in.r(kS), in.r({5, 1})}});
  c.push_back({"sub", [](auto& v) { return sub(v[0], v[1]); }, {in.r({5, 1}), in.r(kS)}});
  c.push_back({"mul", [](auto& v) { return mul(v[0], v[1]); }, {in.r(kS), in.r({7})}});
  c.push_back({"div", [](auto& v) { return div(v[0], v[1]); }, {in.r(kS), in.r({5, 7}, 0.5, 2)}});
  c.push_back({"maximum", [](auto& v) { return maximum(v[0], v[1]); }, {in.r(kS), in.r({7})}});
  c.push_back({"minimum", [](auto& v) { return minimum(v[0], v[1]); }, {in.r(kS), in.r({5, 1})}});
  c.push_back({"where",
               [](auto& v) { return where(v[0].value(), v[1], v[2]); },
               {in.mask(kS), in.r(kS), in.r({5, 7})}});
  c.push_back({"masked_fill",
               [](auto& v) { return masked_fill(v[0], v[1].value(), -1.5); },
               {in.r(kS), in.mask({5, 1})}});
  // ---- reductions
  c.push_back({"sum dim 1", [](auto& v) { return sum(v[0], {1}); }, {in.r(kS)}});
  c.push_back({"sum all", [](auto& v) { return sum(v[0]); }, {in.r(kS)}});
  c.push_back({"mean dims 0,2 keepdim",
               [](auto& v) {
                 return mean(v[0], {0, 2}, true);
               },
               {in.r(kS)}});
  c.push_back({"max dim 2", [](auto& v) { return max(v[0], {2}); }, {in.r(kS)}});
  c.push_back({"logsumexp dim 1", [](auto& v) { return logsumexp(v[0], {1}); }, {in.r(kS, -2, 2)}});
  c.push_back({"cumsum dim 1", [](auto& v) { return cumsum(v[0], 1); }, {in.r(kS)}});
  c.push_back({"cumsum dim 2 reverse", [](auto& v) { return cumsum(v[0], 2, true); }, {in.r(kS)}});
  // ---- normalization, losses
  c.push_back({"softmax dim 1", [](auto& v) { return softmax(v[0], 1); }, {in.r(kS, -2, 2)}});
  c.push_back(
      {"log_softmax dim -1", [](auto& v) { return log_softmax(v[0], -1); }, {in.r(kS, -2, 2)}});
  c.push_back({"layer_norm",
               [](auto& v) { return layer_norm(v[0], v[1], v[2]); },
               {in.r(kS, -2, 2), in.r({7}, 0.5, 1.5), in.r({7})},
               true});
  // A Generator with a fixed seed built inside f: the same mask on both devices by design
  // (Philox: element i depends only on (seed, offset, i)).
  c.push_back({"dropout",
               [](auto& v) {
                 Generator gen(42);
                 return dropout(v[0], 0.3, gen, true);
               },
               {in.r(kS)}});
  for (const Activation act : {Activation::gelu, Activation::relu})
    c.push_back(
        {std::string("activation_dropout_linear ") + (act == Activation::gelu ? "gelu" : "relu"),
         [act](auto& v) {
           Generator gen(42);
           return activation_dropout_linear(v[0], act, 0.3, gen, true, v[1], v[2]);
         },
         {in.away0({15, 7}), in.r({5, 7}), in.r({5})},
         true});
  const Tensor target = ids({1, 4, -100, 0, 4, 2, 3});  // one ignored row
  for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none})
    c.push_back({"cross_entropy reduction " + std::to_string(static_cast<int>(red)),
                 [red](auto& v) { return cross_entropy(v[0], v[1].value(), -100, red); },
                 {in.r({7, 5}, -2, 2), target}});
  // ---- linear algebra, FFT
  c.push_back({"matmul batch-broadcast",
               [](auto& v) { return matmul(v[0], v[1]); },
               {in.r(kS), in.r({7, 6})},
               true});
  c.push_back({"matmul trans_a trans_b",
               [](auto& v) { return matmul(v[0], v[1], true, true); },
               {in.r({3, 7, 5}), in.r({3, 6, 7})},
               true});
  c.push_back({"bmm", [](auto& v) { return bmm(v[0], v[1]); }, {in.r(kS), in.r({3, 7, 4})}, true});
  c.push_back({"bmm trans_b",
               [](auto& v) { return bmm(v[0], v[1], false, true); },
               {in.r(kS), in.r({3, 4, 7})},
               true});
  c.push_back({"rfft", [](auto& v) { return rfft(v[0]); }, {in.r(kS)}, true});
  c.push_back({"rfft n 10", [](auto& v) { return rfft(v[0], 10); }, {in.r(kS)}, true});
  c.push_back({"irfft", [](auto& v) { return irfft(v[0]); }, {in.r({3, 5, 2})}, true});
  c.push_back({"irfft n 7", [](auto& v) { return irfft(v[0], 7); }, {in.r({3, 5, 2})}, true});
  c.push_back({"complex_mul broadcast",
               [](auto& v) { return complex_mul(v[0], v[1]); },
               {in.r({3, 5, 2}), in.r({5, 2})}});
  c.push_back({"complex_mul conj",
               [](auto& v) { return complex_mul(v[0], v[1], true); },
               {in.r({3, 1, 2}), in.r({4, 2})}});
  // ---- indexing (repeated indices: the backward accumulates), joining
  c.push_back({"index_select",
               [](auto& v) { return index_select(v[0], 1, v[1].value()); },
               {in.r(kS), ids({4, 0, 4, 2, 4})}});
  c.push_back({"embedding",
               [](auto& v) { return embedding(v[0], v[1].value()); },
               {in.r({11, 7}), in.idx({3, 5}, 11)}});
  c.push_back({"gather",
               [](auto& v) { return gather(v[0], 1, v[1].value()); },
               {in.r(kS), in.idx({3, 6, 7}, 5)}});
  c.push_back({"scatter_add",
               [](auto& v) { return scatter_add(v[0], 1, v[1].value(), v[2]); },
               {in.r(kS), in.idx({3, 6, 7}, 5), in.r({3, 6, 7})}});
  c.push_back({"index_add",
               [](auto& v) { return index_add(v[0], 2, v[1].value(), v[2]); },
               {in.r(kS), ids({6, 1, 6, 3}), in.r({3, 5, 4})}});
  c.push_back({"cat",
               [](auto& v) {
                 return cat({v[0], v[1], v[2]}, 1);
               },
               {in.r({3, 2, 7}), in.r(kS), in.r({3, 1, 7})}});
  c.push_back({"stack", [](auto& v) { return stack({v[0], v[1]}, 2); }, {in.r(kS), in.r(kS)}});
  c.push_back({"pad", [](auto& v) { return pad(v[0], {1, 2, 0, 3}, 0.5); }, {in.r(kS)}});
  c.push_back({"slice_assign broadcast src",
               [](auto& v) { return slice_assign(v[0], 2, 1, 4, v[1]); },
               {in.r(kS), in.r({5, 1})}});
  // ---- views, casts
  c.push_back({"reshape", [](auto& v) { return reshape(v[0], {15, 7}); }, {in.r(kS)}});
  c.push_back({"transpose", [](auto& v) { return transpose(v[0], 0, 2); }, {in.r(kS)}});
  c.push_back({"permute", [](auto& v) { return permute(v[0], {2, 0, 1}); }, {in.r(kS)}});
  c.push_back({"slice step 2", [](auto& v) { return slice(v[0], 2, 1, 7, 2); }, {in.r(kS)}});
  c.push_back({"select", [](auto& v) { return select(v[0], 1, 3); }, {in.r(kS)}});
  c.push_back({"expand", [](auto& v) { return expand(v[0], kS); }, {in.r({3, 1, 7})}});
  c.push_back({"unsqueeze", [](auto& v) { return unsqueeze(v[0], 1); }, {in.r(kS)}});
  c.push_back({"squeeze", [](auto& v) { return squeeze(v[0], 1); }, {in.r({3, 1, 7})}});
  c.push_back({"flatten", [](auto& v) { return flatten(v[0], 1, -1); }, {in.r(kS)}});
  c.push_back({"diagonal", [](auto& v) { return diagonal(v[0], 1, 0, 2); }, {in.r(kS)}});
  c.push_back({"contiguous of transpose",
               [](auto& v) { return contiguous(transpose(v[0], 1, 2)); },
               {in.r(kS)}});
  c.push_back({"cast", [other](auto& v) { return cast(v[0], other); }, {in.r(kS)}});
  // The fused attention op: padding, a causal window and dropout drawn from a fixed generator.
  c.push_back({"attention",
               [](auto& v) {
                 AttentionSpec spec;
                 spec.scale = 0.4;
                 spec.key_mask = v[3].value();
                 spec.causal = true;
                 spec.window = 4;
                 spec.dropout = 0.2;
                 Generator gen(11);
                 return attention(v[0], v[1], v[2], spec, gen, true);
               },
               {in.r({2, 3, 9, 5}), in.r({2, 3, 11, 5}), in.r({2, 3, 11, 6}), in.mask({2, 11})},
               true});
  return c;
}

// {y, grad of each floating input} after y = f(inputs) and y.backward(g), g fixed (seed 4242,
// made on the CPU in y's dtype and moved to y's device).
std::vector<Tensor> forward_backward(const Fn& f, const std::vector<Tensor>& inputs) {
  std::vector<Var> vars;
  for (const Tensor& x : inputs) vars.emplace_back(x, is_floating(x.dtype()));
  const Var y = f(vars);
  y.backward(test::random_tensor(y.shape(), y.dtype(), 4242).to(y.device()));
  std::vector<Tensor> out{y.value()};
  for (const Var& v : vars)
    if (v.requires_grad()) out.push_back(v.grad());
  return out;
}

void sweep(DType dt) {
  for (const Case& c : make_cases(dt)) {
    INFO(c.name << " " << (dt == DType::f32 ? "f32" : "f64"));
    const auto run = [&c](const std::vector<Tensor>& xs) { return forward_backward(c.f, xs); };
    // The CPU half runs with or without a GPU: the value and every gradient exist and are finite.
    for (const Tensor& t : run(c.inputs)) {
      REQUIRE(t.defined());
      CHECK(all_finite(t));
    }
    const double tol = dt == DType::f64 ? kTolF64 : c.loose ? kTolF32Loose : kTolF32;
    test::check_cuda_matches_cpu(c.name, run, c.inputs, tol, tol);
  }
}

}  // namespace

TEST_CASE("grad CUDA: every autograd function matches the CPU, forward and backward, f32") {
  sweep(DType::f32);
}

TEST_CASE("grad CUDA: every autograd function matches the CPU, forward and backward, f64") {
  sweep(DType::f64);
}
