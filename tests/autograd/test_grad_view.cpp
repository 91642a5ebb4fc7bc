// Gradchecks of the views and casts (autograd/functions/view.cpp) on contiguous and
// non-contiguous inputs and through a chain of views; forward values share the input's storage
// and equal the Tensor views.
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tests/autograd/grad_checks.h"
#include "tests/harness.h"

using namespace relpos;

namespace {

// test::check_noncontiguous_grad where test::strided_copy can give f's output a non-contiguous
// layout; outputs like [] or [3, 1, 7] (size-1 trailing dims) stay dense there, and are covered by
// the gradchecks through transposed views instead.
void check_strided_grad(const std::function<Var(const std::vector<Var>&)>& f, const Tensor& x) {
  const Shape out = f({Var(x)}).shape();  // x needs no grad: no graph is recorded
  if (test::strided_copy(zeros(out, DType::f64)).is_contiguous()) return;
  test::check_noncontiguous_grad(f, {x});
}

using ViewFn = std::function<Var(const Var&)>;
using TensorViewFn = std::function<Tensor(const Tensor&)>;

const Shape kShape{3, 5, 7};

// gradcheck of f on x as is and on a non-contiguous input (x permuted, then permuted back inside
// f, so f sees x's values with scrambled strides); then the forward value: a view of x's storage
// with the same values as the Tensor view.
void check_view(const std::string& name, const ViewFn& f, const TensorViewFn& view, const Tensor& x,
                bool is_view = true) {
  INFO(name);
  const auto plain = gradcheck([&](const std::vector<Var>& v) { return f(v[0]); }, {x});
  CHECK_MESSAGE(plain.ok, plain.detail);
  const auto strided = gradcheck(
      [&](const std::vector<Var>& v) {
        return f(permute(permute(v[0], {2, 0, 1}), {1, 2, 0}));
      },
      {x});
  CHECK_MESSAGE(strided.ok, strided.detail);
  check_strided_grad([&](const std::vector<Var>& v) { return f(v[0]); }, x);

  if (is_view) CHECK(f(Var(x)).value().storage() == x.storage());
  const Tensor xs = test::strided_copy(x);
  const Var out = f(Var(xs));
  CHECK(out.shape() == view(xs).shape());
  CHECK(out.value().to_vector<double>() == view(xs).to_vector<double>());
}

// The gradient of sum(f(x) * g) at x.
Tensor grad_of(const ViewFn& f, const Tensor& x, const Tensor& g) {
  Var v(x, true);
  f(v).backward(g);
  return v.grad();
}

}  // namespace

// Views move values without arithmetic: the finite differences are exact up to rounding of
// L = sum(f(x) r), so the default gradcheck tolerances (atol 1e-6, rtol 1e-4) have wide margin.

TEST_CASE("grad: reshape, flatten, unsqueeze, squeeze gradcheck, strided inputs") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 31);
  check_view(
      "reshape [5, 21]",
      [](const Var& v) {
        return reshape(v, {5, 21});
      },
      [](const Tensor& t) {
        return t.reshape({5, 21});
      },
      x);
  check_view(
      "reshape [-1, 3]",
      [](const Var& v) {
        return reshape(v, {-1, 3});
      },
      [](const Tensor& t) {
        return t.reshape({-1, 3});
      },
      x);
  check_view(
      "flatten all", [](const Var& v) { return flatten(v); },
      [](const Tensor& t) { return t.flatten(); }, x);
  check_view(
      "flatten 1..2", [](const Var& v) { return flatten(v, 1, 2); },
      [](const Tensor& t) { return t.flatten(1, 2); }, x);
  check_view(
      "flatten 0..-2", [](const Var& v) { return flatten(v, 0, -2); },
      [](const Tensor& t) { return t.flatten(0, -2); }, x);
  for (int64_t d : {0, 2, 3, -1, -4}) {
    check_view(
        "unsqueeze " + std::to_string(d), [d](const Var& v) { return unsqueeze(v, d); },
        [d](const Tensor& t) { return t.unsqueeze(d); }, x);
  }
  const Tensor with_ones = test::random_tensor({3, 1, 7}, DType::f64, 32);
  for (int64_t d : {1, -2}) {
    check_view(
        "squeeze " + std::to_string(d), [d](const Var& v) { return squeeze(v, d); },
        [d](const Tensor& t) { return t.squeeze(d); }, with_ones);
  }
}

TEST_CASE("grad: transpose and permute gradcheck with negative dims, strided inputs") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 33);
  check_view(
      "transpose 0 2", [](const Var& v) { return transpose(v, 0, 2); },
      [](const Tensor& t) { return t.transpose(0, 2); }, x);
  check_view(
      "transpose -1 -2", [](const Var& v) { return transpose(v, -1, -2); },
      [](const Tensor& t) { return t.transpose(-1, -2); }, x);
  for (const std::vector<int64_t>& p : {std::vector<int64_t>{2, 0, 1}, {1, 2, 0}, {-1, 0, -2}}) {
    check_view(
        fmt::format("permute [{}]", fmt::join(p, ", ")),
        [p](const Var& v) { return permute(v, p); }, [p](const Tensor& t) { return t.permute(p); },
        x);
  }
}

TEST_CASE("grad: slice gradcheck with steps, negative and clamped bounds, strided inputs") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 34);
  struct Case {
    int64_t dim, start, end, step;
  };
  for (const Case& c : {Case{0, 1, 3, 1}, Case{1, 0, 5, 2}, Case{2, 1, 7, 3}, Case{-1, -5, -1, 2},
                        Case{1, 2, 100, 1}, Case{2, 3, 3, 1}, Case{-3, 0, 3, 2}}) {
    check_view(
        fmt::format("slice dim {} [{}:{}:{}]", c.dim, c.start, c.end, c.step),
        [c](const Var& v) { return slice(v, c.dim, c.start, c.end, c.step); },
        [c](const Tensor& t) { return t.slice(c.dim, c.start, c.end, c.step); }, x);
  }
}

TEST_CASE("grad: select and diagonal gradcheck, negative dims, indices and offsets") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 35);
  for (const auto& [dim, index] : {std::pair<int64_t, int64_t>{0, 2}, {1, 0}, {-1, -3}}) {
    check_view(
        fmt::format("select dim {} index {}", dim, index),
        [dim = dim, index = index](const Var& v) { return select(v, dim, index); },
        [dim = dim, index = index](const Tensor& t) { return t.select(dim, index); }, x);
  }
  struct Case {
    int64_t offset, d0, d1;
  };
  for (const Case& c :
       {Case{0, 0, 1}, Case{2, 0, 1}, Case{-1, 1, 2}, Case{1, -1, 0}, Case{-2, 2, 0}}) {
    check_view(
        fmt::format("diagonal offset {} dims {} {}", c.offset, c.d0, c.d1),
        [c](const Var& v) { return diagonal(v, c.offset, c.d0, c.d1); },
        [c](const Tensor& t) { return t.diagonal(c.offset, c.d0, c.d1); }, x);
  }
}

TEST_CASE("grad: expand gradcheck sums the gradient over broadcast and new leading dims") {
  const Tensor x = test::random_tensor({3, 1, 7}, DType::f64, 36);
  check_view(
      "expand [2, 3, 5, 7]",
      [](const Var& v) {
        return expand(v, {2, 3, 5, 7});
      },
      [](const Tensor& t) {
        return t.expand({2, 3, 5, 7});
      },
      x);
  check_view(
      "expand same shape",
      [](const Var& v) {
        return expand(v, {3, 1, 7});
      },
      [](const Tensor& t) {
        return t.expand({3, 1, 7});
      },
      x);
  // With g = 1 every input element receives the number of copies made of it: 2 * 5.
  const Tensor g = ones({2, 3, 5, 7}, DType::f64);
  const Tensor dx = grad_of([](const Var& v) { return expand(v, {2, 3, 5, 7}); }, x, g);
  CHECK(dx.to_vector<double>() == std::vector<double>(21, 10.0));
}

TEST_CASE("grad: slice, select, diagonal backward scatter g into zeros at the viewed positions") {
  // x: [3, 4] holding 0..11; g holds 1..k, so the gradient shows exactly where each lands.
  const Tensor x = arange(0, 12, 1, DType::f64).reshape({3, 4});
  const Tensor g2 = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(grad_of([](const Var& v) { return slice(v, 1, 1, 4, 2); }, x, g2).to_vector<double>() ==
        std::vector<double>{0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6});
  const Tensor g1 = Tensor::from_vector<double>({1, 2, 3}, {3});
  CHECK(grad_of([](const Var& v) { return select(v, 1, -1); }, x, g1).to_vector<double>() ==
        std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3});
  CHECK(grad_of([](const Var& v) { return diagonal(v, 1); }, x, g1).to_vector<double>() ==
        std::vector<double>{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3});
}

TEST_CASE("grad: contiguous gradcheck on a transposed input; result is dense") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 37);
  check_view(
      "contiguous of transpose", [](const Var& v) { return contiguous(transpose(v, 0, 2)); },
      [](const Tensor& t) { return t.transpose(0, 2).contiguous(); }, x, /*is_view=*/false);
  CHECK(contiguous(transpose(Var(x), 0, 1)).value().is_contiguous());
}

TEST_CASE("grad: cast f64 -> f32 -> f64 gradcheck; the gradient comes back in the input's dtype") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 38);
  // The f32 round trip rounds values by ~6e-8 relative, so finite differences need a step far
  // above that: eps 1e-2 on a linear function is exact up to ulp(x) / eps ~ 1e-5 (atol 1e-4).
  GradcheckOptions opts;
  opts.eps = 1e-2;
  opts.atol = 1e-4;
  const auto result = gradcheck(
      [](const std::vector<Var>& v) {
        return cast(mul_scalar(cast(v[0], DType::f32), 3), DType::f64);
      },
      {x}, opts);
  CHECK_MESSAGE(result.ok, result.detail);
  const auto same =
      gradcheck([](const std::vector<Var>& v) { return cast(v[0], DType::f64); }, {x});
  CHECK_MESSAGE(same.ok, same.detail);

  Var v32(cast(x, DType::f32), true);
  const Var y = cast(v32, DType::f64);
  CHECK(y.dtype() == DType::f64);
  CHECK(y.value().to_vector<double>() == cast(x, DType::f32).to_vector<double>());
  y.backward(full(kShape, 0.5, DType::f64));
  CHECK(v32.grad().dtype() == DType::f32);
  CHECK(v32.grad().to_vector<double>() == std::vector<double>(shape_numel(kShape), 0.5));

  CHECK_THROWS_WITH_AS(cast(Var(x), DType::i64), doctest::Contains("[cast]"), Error);
}

TEST_CASE("grad: a chain of views gradchecks and equals the same chain of Tensor views") {
  // Every backward in the chain receives the previous one's non-contiguous gradient (including
  // sum_to's reduction of the stride-0 expand).
  const Tensor x = test::random_tensor({4, 5, 7}, DType::f64, 39);
  const auto chain = [](const Var& v) {
    const Var p = permute(v, {2, 0, 1});                       // [7, 4, 5]
    const Var s = slice(p, 0, 1, 7, 2);                        // [3, 4, 5]
    const Var d = diagonal(transpose(s, 1, 2), 1, 1, 2);       // [3, 3]
    const Var e = expand(unsqueeze(d, 0), {2, 3, 3});          // [2, 3, 3]
    return slice(reshape(select(e, 2, -1), {6}), 0, 1, 6, 2);  // [3]
  };
  const auto tensor_chain = [](const Tensor& t) {
    const Tensor d = t.permute({2, 0, 1}).slice(0, 1, 7, 2).transpose(1, 2).diagonal(1, 1, 2);
    return d.unsqueeze(0).expand({2, 3, 3}).select(2, -1).reshape({6}).slice(0, 1, 6, 2);
  };
  const auto result = gradcheck([&](const std::vector<Var>& v) { return chain(v[0]); }, {x});
  CHECK_MESSAGE(result.ok, result.detail);
  CHECK(chain(Var(x)).value().to_vector<double>() == tensor_chain(x).to_vector<double>());
}
