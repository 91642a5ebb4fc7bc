// bf16 autocast of products (autograd/autocast.h): matmul and bmm round their f32 operands and
// the incoming gradient to bf16 and sum in f32 (forward and every gradient against that formula
// written out), f64 and scopes without the guard are untouched, the fused feed-forward follows
// autocast's formula (bf16 h, activation and their gradients) on the CPU and on CUDA, an
// activation kept for the backward takes half its bytes, and the guard refuses other dtypes.
#include <cmath>
#include <cstring>

#include "autograd/autocast.h"
#include "core/allocator.h"
#include "tests/autograd/grad_checks.h"

using namespace relpos;
using test::same_bits;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, DType dtype = DType::f32) {
  return test::random_tensor(s, dtype, seed, -2, 2);
}
Tensor r16(const Tensor& x) {  // x rounded to bf16, as f32
  return cast(cast(x, DType::bf16), DType::f32);
}
}  // namespace

TEST_CASE("autocast: matmul and bmm round operands and gradients to bf16, sum in f32") {
  for (const bool batched : {false, true})
    for (const int flags : {0, 1, 2, 3}) {
      const bool ta = (flags & 1) != 0, tb = (flags & 2) != 0;
      CAPTURE(batched);
      CAPTURE(ta);
      CAPTURE(tb);
      // a: [3, 7, 9] or its transpose; b: [3 or 1, 9, 5] or its transpose (broadcast batch).
      const Tensor a = rnd(ta ? Shape{3, 9, 7} : Shape{3, 7, 9}, 1);
      const Tensor b = rnd(Shape{batched ? 3 : 1, tb ? 5 : 9, tb ? 9 : 5}, 2);
      const Tensor g = rnd({3, 7, 5}, 3);
      Var av(a, true), bv(b, true);
      Var y;
      {
        const AutocastGuard guard(DType::bf16);
        y = batched ? bmm(av, bv, ta, tb) : matmul(av, bv, ta, tb);
      }
      y.backward(g);  // outside the scope: the node decided when it was built
      CHECK(y.value().dtype() == DType::f32);
      CHECK(av.grad().dtype() == DType::f32);
      // The formula on the rounded values, in f64 (f32 sums differ from it by rounding only).
      const auto f64 = [](const Tensor& t) { return cast(r16(t), DType::f64); };
      const Tensor want_y = matmul(f64(a), f64(b), ta, tb);
      CHECK_CLOSE(y.value(), want_y, 1e-5, 1e-5);
      // dA = dY op(B)^T (up to the transposes), dB likewise, summed over a broadcast batch.
      const Tensor opb = tb ? f64(b).transpose(1, 2) : f64(b);
      const Tensor opa = ta ? f64(a).transpose(1, 2) : f64(a);
      const Tensor d_opa = matmul(f64(g), opb, false, true);  // [3, 7, 9]
      Tensor d_opb = matmul(opa, f64(g), true, false);        // [3, 9, 5]
      if (!batched) d_opb = sum(d_opb, {0}, true);
      CHECK_CLOSE(av.grad(), ta ? d_opa.transpose(1, 2) : d_opa, 1e-5, 1e-5);
      CHECK_CLOSE(bv.grad(), tb ? d_opb.transpose(1, 2) : d_opb, 1e-5, 1e-5);
      // Not the f32 product: the rounding is there (far above f32's error).
      CHECK_FALSE(test::compare_close(y.value(),
                                      matmul(cast(a, DType::f64), cast(b, DType::f64), ta, tb),
                                      1e-5, 1e-5)
                      .ok);
    }
}

TEST_CASE("autocast: f64 products and products outside the scope are not rounded") {
  const Tensor a = rnd({6, 8}, 4), b = rnd({8, 3}, 5);
  const Tensor plain = matmul(Var(a), Var(b)).value();
  {
    const AutocastGuard guard(DType::bf16);
    CHECK(autocast_dtype() == DType::bf16);
    const Tensor a64 = cast(a, DType::f64), b64 = cast(b, DType::f64);
    CHECK(same_bits(matmul(Var(a64), Var(b64)).value(), matmul(a64, b64)));
    {
      const AutocastGuard inner(DType::f32);
      CHECK(same_bits(matmul(Var(a), Var(b)).value(), plain));
    }
    CHECK(autocast_dtype() == DType::bf16);
  }
  CHECK(autocast_dtype() == DType::f32);
  CHECK(same_bits(matmul(Var(a), Var(b)).value(), plain));
  CHECK(test::error_of([] { const AutocastGuard f64(DType::f64); }) ==
        "[autocast] products can run in f32 or bf16, not f64");
}

TEST_CASE("autocast: the fused feed-forward in bf16 is autocast's formula, bit for bit") {
  // PyTorch's autocast runs linear, act, dropout, linear with h = fc1's output, act(h), its
  // dropout, and in the backward fc2's input gradient and act's, as bf16 tensors (each computed
  // in f32, rounded once); fc2's products sum in f32. The node follows the same formula.
  for (const Activation act : {Activation::gelu, Activation::relu})
    for (const double p : {0.0, 0.3}) {
      CAPTURE(p);
      const Tensor h = rnd({37, 53}, 6), w = rnd({11, 53}, 7), b = rnd({11}, 8);
      const Tensor g = rnd({37, 11}, 9);
      Var hv(h, true), wv(w, true), bv(b, true);
      Var y;
      {
        const AutocastGuard guard(DType::bf16);
        Generator gen(3);
        y = activation_dropout_linear(hv, act, p, gen, true, wv, bv);
      }
      y.backward(g);

      const DType bf = DType::bf16, f32 = DType::f32;
      const Tensor h16 = cast(h, bf), w16 = cast(w, bf), g16 = cast(g, bf);
      Generator gen(3);
      const Tensor mask = p > 0 ? dropout_mask(h.shape(), p, gen) : ones(h.shape(), DType::u8);
      const Tensor a = apply_dropout_mask(act == Activation::gelu ? gelu(h16) : relu(h16), mask, p);
      const Tensor da = apply_dropout_mask(matmul(g16, w16), mask, p);  // bf16
      const Tensor dh = act == Activation::gelu ? gelu_backward(h16, da) : relu_backward(h16, da);
      CHECK(same_bits(y.value(), add(matmul(a, w16, false, true, f32), b)));
      CHECK(same_bits(wv.grad(), matmul(g16, a, true, false, f32)));
      CHECK(same_bits(hv.grad(), cast(dh, f32)));
      CHECK(same_bits(bv.grad(), sum(g, {0})));
      // And the rounding happened: the f32 result differs.
      Generator again(3);
      const Var y32 = activation_dropout_linear(Var(h), act, p, again, true, Var(w), Var(b));
      CHECK_FALSE(same_bits(y32.value(), y.value()));
    }
}

TEST_CASE("autocast: the fused feed-forward in bf16 on CUDA matches the CPU") {
  if (!cuda_available()) {
    MESSAGE("SKIPPED (no CUDA device): the fused feed-forward in bf16 on CUDA");
    return;
  }
  const Tensor h = rnd({67, 96}, 15), w = rnd({40, 96}, 16), b = rnd({40}, 17);
  const Tensor g = rnd({67, 40}, 18);
  std::vector<Tensor> results;
  for (const Device device : {Device::cpu(), Device::cuda(0)}) {
    Var hv(h.to(device), true), wv(w.to(device), true), bv(b.to(device), true);
    Var y;
    {
      const AutocastGuard guard(DType::bf16);
      Generator gen(19);
      y = activation_dropout_linear(hv, Activation::gelu, 0.2, gen, true, wv, bv);
    }
    y.backward(g.to(device));
    results.insert(results.end(), {y.value(), hv.grad(), wv.grad(), bv.grad()});
  }
  // The same masks and roundings; the GEMMs sum in other orders, so a bf16 rounding of act or
  // of fc2's input gradient may fall the other way: a few bf16 ulps of the largest value.
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const Tensor want = results[i], got = results[i + 4].to(Device::cpu());
    const double largest = max(abs(want)).to_vector<double>()[0];
    CHECK_CLOSE(got, want, 0, 4 * std::ldexp(largest, -8));
  }
}

TEST_CASE("autocast: the fused feed-forward keeps fc1's output in bf16, half its bytes") {
  const Device cpu = Device::cpu();
  const int64_t rows = 256, hidden = 512, out = 64;
  const Tensor h = rnd({rows, hidden}, 12), w = rnd({out, hidden}, 13), b = rnd({out}, 14);
  for (const DType products : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(products));
    Var hv(h, true), wv(w, true), bv(b, true);
    const int64_t before = memory_stats(cpu).current_bytes;
    Var y;
    {
      const AutocastGuard guard(products);
      Var x = mul_scalar(hv, 0.5);  // fc1's output: only the fused node keeps it
      Generator gen(1);
      y = activation_dropout_linear(x, Activation::gelu, 0.1, gen, true, wv, bv);
    }
    // Besides the output: h (f32, or its bf16 copy; the f32 one is freed), and under bf16 a copy
    // of the weight; no activation or mask.
    const int64_t held = memory_stats(cpu).current_bytes - before - y.value().numel() * 4;
    CHECK(held == (products == DType::f32 ? h.numel() * 4 : (h.numel() + w.numel()) * 2));
  }
}

TEST_CASE("autocast: a product keeps an activation operand in bf16, half its bytes") {
  const Device cpu = Device::cpu();
  const Tensor a = rnd({256, 512}, 10), b = rnd({512, 128}, 11);
  for (const DType products : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(products));
    Var av(a, true), bv(b, true);
    const int64_t before = memory_stats(cpu).current_bytes;
    Var y;
    {
      const AutocastGuard guard(products);
      Var x = mul_scalar(av, 0.5);  // an activation: only the product keeps it
      y = matmul(x, bv);
    }
    // What the graph holds besides the output: the activation (f32, or its bf16 copy; the f32
    // one is freed), and under bf16 a copy of the weight too, which stays alive as a leaf.
    const int64_t held = memory_stats(cpu).current_bytes - before - y.value().numel() * 4;
    CHECK(held == (products == DType::f32 ? a.numel() * 4 : (a.numel() + b.numel()) * 2));
  }
}
