// activation_dropout_linear (autograd/functions/feed_forward.cpp): the same bits as activate,
// dropout and matmul composed (output, every gradient, the generator after), a float64
// gradcheck, and the memory it keeps between the passes (fc1's output only).
#include "core/allocator.h"
#include "tests/autograd/grad_checks.h"

using namespace relpos;
using test::check_grad;

namespace {

Tensor rnd(const Shape& s, DType dtype, uint64_t seed, double lo = -2, double hi = 2) {
  return test::random_tensor(s, dtype, seed, lo, hi);
}

// The composed form FeedForward computed before.
Var composed(const Var& h, Activation act, double p, Generator& gen, bool training, const Var& w,
             const Var& b) {
  const Var y = matmul(dropout(activate(act, h), p, gen, training), w, false, true);
  return b.defined() ? y + b : y;
}

}  // namespace

TEST_CASE(
    "activation_dropout_linear: the bits of act, dropout and linear composed, gradients too") {
  for (const DType dtype : {DType::f32, DType::f64})
    for (const Activation act : {Activation::gelu, Activation::relu})
      for (const double p : {0.0, 0.3})
        for (const bool with_bias : {true, false})
          for (const bool training : {true, false}) {
            INFO(dtype_name(dtype) << " gelu " << (act == Activation::gelu) << " p " << p
                                   << " bias " << with_bias << " training " << training);
            // Odd sizes: 37 rows, 53 hidden, 11 out.
            const Tensor h = rnd({37, 53}, dtype, 1), w = rnd({11, 53}, dtype, 2, -0.3, 0.3);
            const Tensor b = rnd({11}, dtype, 3), g = rnd({37, 11}, dtype, 4);
            std::vector<Tensor> outputs, grads;
            std::vector<uint64_t> offsets;
            for (const bool fused : {true, false}) {
              Var hv(h, true), wv(w, true), bv = with_bias ? Var(b, true) : Var();
              Generator gen(9);
              gen.reserve(5);
              const Var y = fused ? activation_dropout_linear(hv, act, p, gen, training, wv, bv)
                                  : composed(hv, act, p, gen, training, wv, bv);
              y.backward(g);
              outputs.push_back(y.value());
              grads.push_back(hv.grad());
              grads.push_back(wv.grad());
              if (with_bias) grads.push_back(bv.grad());
              offsets.push_back(gen.offset());
            }
            test::check_same(outputs[0], outputs[1]);
            const size_t n = grads.size() / 2;
            for (size_t i = 0; i < n; ++i) test::check_same(grads[i], grads[n + i]);
            CHECK(offsets[0] == offsets[1]);
          }
}

TEST_CASE("activation_dropout_linear: float64 gradcheck with a generator rebuilt inside f") {
  const Tensor h = rnd({7, 13}, DType::f64, 5), w = rnd({5, 13}, DType::f64, 6, -0.5, 0.5);
  const Tensor b = rnd({5}, DType::f64, 7);
  for (const Activation act : {Activation::gelu, Activation::relu})
    for (const double p : {0.0, 0.4}) {
      INFO("gelu " << (act == Activation::gelu) << " p " << p);
      check_grad(
          [act, p](const std::vector<Var>& v) {
            Generator gen(3);
            return activation_dropout_linear(v[0], act, p, gen, true, v[1], v[2]);
          },
          {h, w, b});
    }
}

TEST_CASE("activation_dropout_linear: between the passes it keeps h, not the activation or mask") {
  const int64_t rows = 512, hidden = 1024, out = 64;
  const Tensor h = rnd({rows, hidden}, DType::f32, 8), w = rnd({out, hidden}, DType::f32, 9);
  const Tensor b = rnd({out}, DType::f32, 10);
  const auto kept = [&](bool fused) {
    Var hv(h.clone(), true), wv(w, true), bv(b, true);
    Generator gen(1);
    const int64_t before = memory_stats(Device::cpu()).current_bytes;
    Var y = fused ? activation_dropout_linear(hv, Activation::gelu, 0.1, gen, true, wv, bv)
                  : composed(hv, Activation::gelu, 0.1, gen, true, wv, bv);
    return memory_stats(Device::cpu()).current_bytes - before;
  };
  const int64_t activation = rows * hidden * 4, mask = rows * hidden;
  const int64_t fused = kept(true), naive = kept(false);
  INFO("kept after the forward: fused " << fused << " bytes, composed " << naive);
  CHECK(fused < rows * out * 4 + 4096);       // the output (h is the caller's)
  CHECK(naive - fused >= activation + mask);  // composed: the dropped activation and the mask
}
