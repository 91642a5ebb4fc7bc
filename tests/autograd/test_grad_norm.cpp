// Gradchecks of softmax, log_softmax, layer_norm, dropout and cross_entropy
// (autograd/functions/norm.cpp) at odd sizes, on strided inputs and with non-contiguous output
// gradients; forward values against the core ops.
#include "tests/autograd/grad_checks.h"

using namespace relpos;
using test::check_grad;
using test::check_noncontiguous_grad;
using test::check_same;

namespace {
const Shape kShape{3, 5, 7};
Tensor rnd(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return test::random_tensor(s, DType::f64, seed, lo, hi);
}
}  // namespace

// Gradcheck tolerances are the defaults (eps 1e-6, atol 1e-6, rtol 1e-4): every function here is
// smooth with O(1) derivatives on inputs in [-2, 2] (dropout and cross_entropy's target are
// fixed), so the central-difference error O(eps^2) is far below them.

TEST_CASE("grad: softmax and log_softmax gradcheck over every dim, odd sizes, strided input") {
  const Tensor x = rnd(kShape, 1, -2, 2);
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    INFO("dim " << dim);
    check_grad([dim](const std::vector<Var>& v) { return softmax(v[0], dim); }, {x});
    check_grad([dim](const std::vector<Var>& v) { return log_softmax(v[0], dim); }, {x});
    // x transposed inside f: the function meets a non-contiguous input.
    check_grad([dim](const std::vector<Var>& v) { return softmax(transpose(v[0], 0, 2), dim); },
               {x});
    check_grad([dim](const std::vector<Var>& v) { return log_softmax(transpose(v[0], 0, 2), dim); },
               {x});
    check_same(softmax(Var(x), dim).value(), softmax(x, dim));
    check_same(log_softmax(Var(x), dim).value(), log_softmax(x, dim));
  }
}

TEST_CASE("grad: softmax and log_softmax backward accept non-contiguous output gradients") {
  const Tensor x = rnd(kShape, 2, -2, 2);
  for (int64_t dim : {0, 2}) {
    INFO("dim " << dim);
    check_noncontiguous_grad([dim](const std::vector<Var>& v) { return softmax(v[0], dim); }, {x});
    check_noncontiguous_grad([dim](const std::vector<Var>& v) { return log_softmax(v[0], dim); },
                             {x});
  }
}

TEST_CASE("grad: layer_norm gradcheck with and without weight and bias, odd sizes") {
  const Tensor x = rnd(kShape, 3, -2, 2), w = rnd({7}, 4, 0.5, 1.5), b = rnd({7}, 5);
  const double eps = 1e-5;
  // inputs: x, then the affine parameters that are present, in order.
  for (bool has_w : {true, false})
    for (bool has_b : {true, false}) {
      INFO("weight " << has_w << " bias " << has_b);
      std::vector<Tensor> inputs{x};
      if (has_w) inputs.push_back(w);
      if (has_b) inputs.push_back(b);
      const auto f = [has_w, has_b, eps](const std::vector<Var>& v) {
        const Var weight = has_w ? v[1] : Var();
        const Var bias = has_b ? v[has_w ? 2 : 1] : Var();
        return layer_norm(v[0], weight, bias, eps);
      };
      check_grad(f, inputs);
      check_noncontiguous_grad(f, inputs);
      const Tensor core = layer_norm(x, has_w ? w : Tensor(), has_b ? b : Tensor(), eps).y;
      std::vector<Var> vars;
      for (const Tensor& t : inputs) vars.emplace_back(t);
      check_same(f(vars).value(), core);
    }
  // Non-contiguous x; weight and bias constant (no gradient asked of them).
  const Var cw(w), cb(b);
  check_grad(
      [&](const std::vector<Var>& v) { return layer_norm(transpose(v[0], 0, 1), cw, cb, eps); },
      {rnd({7, 3, 7}, 6, -2, 2)});
}

TEST_CASE("grad: layer_norm without affine: each row of dx sums to 0 (shift invariance)") {
  // layer_norm(x + c) = layer_norm(x) per row, so dx summed over each row is 0 for any gradient.
  Var x(rnd({5, 9}, 7, -2, 2), true);
  layer_norm(x, Var(), Var()).backward(rnd({5, 9}, 8));
  const std::vector<double> row_sums = sum(x.grad(), {1}).to_vector<double>();
  for (double s : row_sums) CHECK(std::abs(s) < 1e-12);
}

TEST_CASE("grad: cross_entropy gradcheck for every reduction with ignored rows") {
  const Tensor logits = rnd({7, 5}, 9, -2, 2);
  // Rows 2 and 5 ignored; the rest in [0, 5) with a repeated class.
  for (int64_t ignore : {-100, 3}) {
    const Tensor target = Tensor::from_vector<int64_t>({1, 4, ignore, 0, 4, ignore, 2}, {7});
    for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
      INFO("ignore_index " << ignore << " reduction " << static_cast<int>(red));
      const auto f = [&target, ignore, red](const std::vector<Var>& v) {
        return cross_entropy(v[0], target, ignore, red);
      };
      check_grad(f, {logits});
      check_grad(
          [&](const std::vector<Var>& v) {
            return cross_entropy(transpose(v[0], 0, 1), target, ignore, red);
          },
          {rnd({5, 7}, 10, -2, 2)});
      check_same(f({Var(logits)}).value(), cross_entropy(logits, target, ignore, red));
      // Ignored rows get exactly zero gradient.
      Var x(logits, true);
      const Var loss = cross_entropy(x, target, ignore, red);
      loss.backward(full(loss.shape(), 1.0, DType::f64));
      for (int64_t row : {2, 5}) CHECK(sum(abs(x.grad().select(0, row))).item() == 0.0);
      CHECK(sum(abs(x.grad().select(0, 0))).item() > 0.0);
    }
    check_noncontiguous_grad(
        [&target, ignore](const std::vector<Var>& v) {
          return cross_entropy(v[0], target, ignore, Reduction::none);
        },
        {logits});
  }
}

TEST_CASE("grad: cross_entropy with every row ignored has zero loss and zero gradient") {
  const Tensor target = full({4}, -100, DType::i64);
  Var x(rnd({4, 3}, 11), true);
  const Var loss = cross_entropy(x, target);
  CHECK(loss.value().item() == 0.0);
  loss.backward();
  CHECK(sum(abs(x.grad())).item() == 0.0);
}

TEST_CASE("grad: dropout gradcheck with a fixed generator rebuilt inside f") {
  const Tensor x = rnd(kShape, 12);
  const double p = 0.3;
  // A fresh Generator(42) on every call: every evaluation of f uses the same mask.
  const auto f = [p](const std::vector<Var>& v) {
    Generator gen(42);
    return dropout(v[0], p, gen, true);
  };
  check_grad(f, {x});
  check_noncontiguous_grad(f, {x});
  // The mask is non-trivial and the kept elements are scaled by 1 / (1 - p); the gradient of
  // sum(y) is that same scale on kept elements and 0 on dropped ones.
  Var v(x, true);
  const Var y = f({v});
  sum(y).backward();
  const std::vector<double> xs = x.to_vector<double>(), ys = y.value().to_vector<double>(),
                            gs = v.grad().to_vector<double>();
  int dropped = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const bool kept = ys[i] != 0;
    dropped += !kept;
    CHECK(ys[i] == doctest::Approx(kept ? xs[i] / (1 - p) : 0.0).epsilon(1e-14));
    CHECK(gs[i] == doctest::Approx(kept ? 1 / (1 - p) : 0.0).epsilon(1e-14));
  }
  CHECK(dropped > 0);
  CHECK(dropped < static_cast<int>(xs.size()));
}

TEST_CASE("grad: dropout in eval mode or with p = 0 is the identity and draws nothing") {
  const Tensor x = rnd(kShape, 13);
  const Tensor g = rnd(kShape, 14);
  for (const auto& [p, training] : {std::pair{0.5, false}, std::pair{0.0, true}}) {
    RELPOS_INFO("p {} training {}", p, training);
    Generator gen(7);
    Var v(x, true);
    const Var y = dropout(v, p, gen, training);
    CHECK(gen.offset() == 0);
    check_same(y.value(), x);
    y.backward(g);
    check_same(v.grad(), g);
  }
  // In training with p > 0 the generator advances, so the next call draws a fresh mask.
  Generator gen(7);
  const Var a = dropout(Var(x), 0.5, gen, true), b = dropout(Var(x), 0.5, gen, true);
  CHECK(gen.offset() > 0);
  CHECK(a.value().to_vector<double>() != b.value().to_vector<double>());
}
