// Gradchecks of cat, stack, pad and slice_assign (autograd/functions/join.cpp): different sizes
// along the joined dim, negative dims, padding in several dims, broadcast sources, inputs that
// need no gradient, and non-contiguous output gradients.
#include "tests/autograd/grad_checks.h"

using namespace relpos;
using test::check_grad;
using test::check_noncontiguous_grad;
using test::check_same;

namespace {
Tensor rnd(const Shape& s, uint64_t seed) {
  return test::random_tensor(s, DType::f64, seed);
}
}  // namespace

// These functions only move values: central differences are exact up to rounding, so the default
// gradcheck tolerances (atol 1e-6, rtol 1e-4) have a wide margin.

TEST_CASE("grad: cat of 3 inputs with different sizes along dim, every dim") {
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    const int d = normalize_dim(dim, 3, "test");
    std::vector<Tensor> xs;
    for (int64_t size : {3, 1, 4}) {
      Shape s{2, 5, 3};
      s[d] = size;
      xs.push_back(rnd(s, 1 + size));
    }
    const auto f = [dim](const std::vector<Var>& v) { return cat(v, dim); };
    check_grad(f, xs);
    check_noncontiguous_grad(f, xs);
    check_same(f({Var(xs[0]), Var(xs[1]), Var(xs[2])}).value(), cat(xs, dim));
  }
  // The middle input is a constant; the outer ones are strided views.
  const Var middle(rnd({3, 2}, 5));
  check_grad(
      [&](const std::vector<Var>& v) {
        return cat({transpose(v[0], 0, 1), middle, transpose(v[1], 0, 1)}, 1);
      },
      {rnd({4, 3}, 6), rnd({1, 3}, 7)});
}

TEST_CASE("grad: stack of 3 inputs at every dim, including the new last one") {
  const std::vector<Tensor> xs = {rnd({3, 5}, 8), rnd({3, 5}, 9), rnd({3, 5}, 10)};
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    INFO("dim " << dim);
    const auto f = [dim](const std::vector<Var>& v) { return stack(v, dim); };
    check_grad(f, xs);
    check_noncontiguous_grad(f, xs);
    check_same(f({Var(xs[0]), Var(xs[1]), Var(xs[2])}).value(), stack(xs, dim));
  }
  const Var constant(rnd({5, 3}, 11));
  check_grad(
      [&](const std::vector<Var>& v) {
        return stack({constant, transpose(v[0], 0, 1)}, 1);
      },
      {rnd({3, 5}, 12)});
}

TEST_CASE("grad: pad in 1, 2 and 3 dims with a fill value; gradient is the unpadded window") {
  const Tensor x = rnd({3, 4, 5}, 13);
  const std::vector<std::vector<int64_t>> cases = {
      {2, 1}, {1, 2, 0, 3}, {0, 0, 2, 0}, {1, 1, 2, 2, 3, 1}};
  for (const auto& pads : cases) {
    INFO("pads [" << fmt::format("{}", fmt::join(pads, ", ")) << "]");
    const auto f = [&pads](const std::vector<Var>& v) { return pad(v[0], pads, 0.5); };
    check_grad(f, {x});
    check_noncontiguous_grad(f, {x});
    check_same(f({Var(x)}).value(), pad(x, pads, 0.5));
  }
  check_grad(
      [](const std::vector<Var>& v) {
        return pad(transpose(v[0], 1, 2), {1, 2, 2, 1});
      },
      {x});
  // The gradient of sum(pad(x) * g) is g cropped to x's window.
  Var v(x, true);
  const Tensor g = rnd({3, 7, 8}, 14);
  pad(v, {1, 2, 0, 3}).backward(g);
  check_same(v.grad().contiguous(), g.slice(2, 1, 6).slice(1, 0, 4).contiguous());
}

TEST_CASE("grad: slice_assign gradcheck on x and src, broadcast src, negative bounds") {
  const Tensor x = rnd({5, 6}, 15);
  struct Case {
    int64_t dim, start, end;
    Shape src;
  };
  const std::vector<Case> cases = {{1, 1, 4, {5, 3}}, {0, 2, 5, {3, 6}},    {1, 1, 4, {3}},
                                   {1, 1, 4, {5, 1}}, {-1, -4, -1, {1, 3}}, {0, 0, 5, {5, 6}}};
  for (const Case& c : cases) {
    INFO("dim " << c.dim << " [" << c.start << ", " << c.end << ") src " << shape_str(c.src));
    const auto f = [&c](const std::vector<Var>& v) {
      return slice_assign(v[0], c.dim, c.start, c.end, v[1]);
    };
    const Tensor src = rnd(c.src, 16);
    check_grad(f, {x, src});
    check_noncontiguous_grad(f, {x, src});
    check_same(f({Var(x), Var(src)}).value(), slice_assign(x, c.dim, c.start, c.end, src));
  }
  // Gradient split: x gets g outside the slice, src gets the slice of g summed over broadcast.
  Var vx(x, true), vs(rnd({3}, 17), true);
  const Tensor g = rnd({5, 6}, 18);
  slice_assign(vx, 1, 1, 4, vs).backward(g);
  check_same(vx.grad().slice(1, 1, 4).contiguous(), zeros({5, 3}, DType::f64));
  check_same(vx.grad().slice(1, 4, 6).contiguous(), g.slice(1, 4, 6).contiguous());
  CHECK_CLOSE(vs.grad(), sum(g.slice(1, 1, 4), {0}), 1e-14, 1e-14);  // same 5-term sums
  // Only src needs a gradient; x is a constant.
  const Var cx(x);
  check_grad([&](const std::vector<Var>& v) { return slice_assign(cx, 0, 1, 3, v[0]); },
             {rnd({2, 6}, 19)});
}
