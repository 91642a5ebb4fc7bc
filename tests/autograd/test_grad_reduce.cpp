// Gradchecks of the reductions and cumsum (autograd/functions/reduce.cpp) over single dims,
// several dims, all dims, negative dims, keepdim both ways; max's tie rule against a naive
// reference; forward values against the core ops.
#include <cmath>

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

using ReduceFn = std::function<Var(const Var&, const std::vector<int64_t>&, bool)>;
using CoreReduceFn = std::function<Tensor(const Tensor&, const std::vector<int64_t>&, bool)>;

const Shape kShape{3, 5, 7};
const std::vector<std::vector<int64_t>> kDimSets = {{0},    {1},      {2},       {-1},
                                                    {0, 2}, {-3, -2}, {2, 0, 1}, {}};

std::string dims_str(const std::vector<int64_t>& dims, bool keepdim) {
  return fmt::format("dims [{}] keepdim {}", fmt::join(dims, ", "), keepdim);
}

// For every dim set and both keepdim values: gradcheck on x, gradcheck on a transposed view of
// x (non-contiguous input), backward from strided and stride-0 gradients equal to backward from
// their contiguous copies, and the forward value against the core op (bitwise).
void check_reduction(const ReduceFn& f, const CoreReduceFn& core, const Tensor& x) {
  for (const auto& dims : kDimSets) {
    for (bool keepdim : {false, true}) {
      INFO(dims_str(dims, keepdim));
      const auto plain =
          gradcheck([&](const std::vector<Var>& v) { return f(v[0], dims, keepdim); }, {x});
      CHECK_MESSAGE(plain.ok, plain.detail);
      const auto strided = gradcheck(
          [&](const std::vector<Var>& v) { return f(transpose(v[0], 0, 2), dims, keepdim); }, {x});
      CHECK_MESSAGE(strided.ok, strided.detail);
      check_strided_grad([&](const std::vector<Var>& v) { return f(v[0], dims, keepdim); }, x);
      test::check_same(f(Var(x), dims, keepdim).value(), core(x, dims, keepdim));
    }
  }
}

// Distinct values 0.01 apart in a scrambled order: no ties, and every maximum leads the runner-up
// by >= 0.01 >> eps, so finite differences never cross a tie.
Tensor tie_free(const Shape& shape) {
  const int64_t n = shape_numel(shape);
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37) % n) * 0.01 - 0.5;
  return Tensor::from_vector(v, shape);
}

// Naive tie-split gradient of max(x, dims, keepdim=true): position i gets g[group] / (number of
// positions of its group equal to the group's maximum) when x[i] is that maximum, else 0.
std::vector<double> naive_max_grad(const Tensor& x, const std::vector<int64_t>& dims,
                                   const Tensor& g_keep) {
  const Shape& shape = x.shape();
  std::vector<bool> reduced(shape.size(), dims.empty());
  for (int64_t d : dims) reduced[normalize_dim(d, x.dim(), "test")] = true;
  const std::vector<double> xv = x.to_vector<double>(), gv = g_keep.to_vector<double>();
  // group[i]: the row-major index of element i's output in the keepdim shape.
  std::vector<int64_t> group(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), key = 0, scale = 1;
    for (int d = x.dim() - 1; d >= 0; --d) {
      const int64_t coord = rest % shape[d];
      rest /= shape[d];
      if (!reduced[d]) {
        key += coord * scale;
        scale *= shape[d];
      }
    }
    group[i] = key;
  }
  std::vector<double> best(gv.size(), -INFINITY), count(gv.size(), 0), grad(xv.size(), 0);
  for (size_t i = 0; i < xv.size(); ++i) best[group[i]] = std::max(best[group[i]], xv[i]);
  for (size_t i = 0; i < xv.size(); ++i) count[group[i]] += xv[i] == best[group[i]];
  for (size_t i = 0; i < xv.size(); ++i)
    if (xv[i] == best[group[i]]) grad[i] = gv[group[i]] / count[group[i]];
  return grad;
}

}  // namespace

// Gradcheck tolerances are the defaults (atol 1e-6, rtol 1e-4, eps 1e-6): these functions are
// linear or smooth with O(1) derivatives on the inputs used.

TEST_CASE("grad: sum gradcheck over single, several, all and negative dims, keepdim both ways") {
  check_reduction([](const Var& x, const auto& d, bool k) { return sum(x, d, k); },
                  [](const Tensor& x, const auto& d, bool k) { return sum(x, d, k); },
                  test::random_tensor(kShape, DType::f64, 21));
}

TEST_CASE("grad: mean gradcheck over single, several, all and negative dims, keepdim both ways") {
  check_reduction([](const Var& x, const auto& d, bool k) { return mean(x, d, k); },
                  [](const Tensor& x, const auto& d, bool k) { return mean(x, d, k); },
                  test::random_tensor(kShape, DType::f64, 22));
}

TEST_CASE("grad: logsumexp gradcheck over single, several, all and negative dims, keepdim both") {
  check_reduction([](const Var& x, const auto& d, bool k) { return logsumexp(x, d, k); },
                  [](const Tensor& x, const auto& d, bool k) { return logsumexp(x, d, k); },
                  test::random_tensor(kShape, DType::f64, 23, -3, 3));
}

TEST_CASE("grad: max gradcheck on tie-free inputs over every dim set, keepdim both ways") {
  check_reduction([](const Var& x, const auto& d, bool k) { return max(x, d, k); },
                  [](const Tensor& x, const auto& d, bool k) { return max(x, d, k); },
                  tie_free(kShape));
}

TEST_CASE("grad: max splits the gradient equally among tied maxima (naive tie-count rule)") {
  // Integers in [0, 3): most groups hold several tied maxima. Exact equality: both sides compute
  // the one division g / count in f64.
  const Tensor x = cast(test::random_indices(kShape, 3, 24), DType::f64);
  for (const auto& dims : kDimSets) {
    for (bool keepdim : {false, true}) {
      INFO(dims_str(dims, keepdim));
      Var v(x, true);
      const Var y = max(v, dims, keepdim);
      const Tensor g = test::random_tensor(y.shape(), DType::f64, 25);
      y.backward(g);
      const Tensor g_keep = g.reshape(max(x, dims, true).shape());
      const std::vector<double> want = naive_max_grad(x, dims, g_keep);
      test::check_same(v.grad(), Tensor::from_vector(want, kShape));
    }
  }
  // A hand-made case: row 0 has its maximum twice, row 1 three times, row 2 once.
  const Tensor rows = Tensor::from_vector<double>({1, 4, 4, 2, 7, 7, 7, 0, 5, 1, 3, 2}, {3, 4});
  Var v(rows, true);
  max(v, {1}).backward(Tensor::from_vector<double>({2, 3, 6}, {3}));
  CHECK(v.grad().to_vector<double>() == std::vector<double>{0, 1, 1, 0, 1, 1, 1, 0, 6, 0, 0, 0});
}

TEST_CASE("grad: logsumexp gradient is a softmax over the reduced dims, finite at large inputs") {
  // x + 1000: exp(x) overflows f64, exp(x - lse) does not. Each group's weights sum to 1
  // (rtol 1e-12: a sum of 35 terms of size ~1/35 in f64).
  const Tensor x = add_scalar(test::random_tensor(kShape, DType::f64, 26, -3, 3), 1000);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1}, std::vector<int64_t>{-1, 0}}) {
    INFO(dims_str(dims, false));
    Var v(x, true);
    sum(logsumexp(v, dims)).backward();
    CHECK(all_finite(v.grad()));
    CHECK_CLOSE(sum(v.grad(), dims), ones(max(x, dims).shape(), DType::f64), 1e-12, 0);
  }
}

TEST_CASE("grad: cumsum gradcheck along every dim, forward and reverse, strided input") {
  const Tensor x = test::random_tensor(kShape, DType::f64, 27);
  for (int64_t dim : {0, 1, 2, -1, -2}) {
    for (bool reverse : {false, true}) {
      INFO("dim " << dim << " reverse " << reverse);
      const auto plain =
          gradcheck([&](const std::vector<Var>& v) { return cumsum(v[0], dim, reverse); }, {x});
      CHECK_MESSAGE(plain.ok, plain.detail);
      const auto strided = gradcheck(
          [&](const std::vector<Var>& v) { return cumsum(transpose(v[0], 0, 2), dim, reverse); },
          {x});
      CHECK_MESSAGE(strided.ok, strided.detail);
      test::check_same(cumsum(Var(x), dim, reverse).value(), cumsum(x, dim, reverse));
    }
  }
}

TEST_CASE("grad: reductions accept a broadcast (stride-0) incoming gradient") {
  // The outer sum hands each reduction's backward an expanded, stride-0 gradient.
  const Tensor x = tie_free(kShape);  // tie-free for max; smooth for the others
  const std::vector<std::pair<const char*, ReduceFn>> fns = {
      {"sum", [](const Var& v, const auto& d, bool k) { return sum(v, d, k); }},
      {"mean", [](const Var& v, const auto& d, bool k) { return mean(v, d, k); }},
      {"max", [](const Var& v, const auto& d, bool k) { return max(v, d, k); }},
      {"logsumexp", [](const Var& v, const auto& d, bool k) { return logsumexp(v, d, k); }},
  };
  for (const auto& [name, f] : fns) {
    RELPOS_INFO("{}", name);
    const auto result = gradcheck(
        [&f = f](const std::vector<Var>& v) { return sum(f(v[0], {1}, false), {0}); }, {x});
    CHECK_MESSAGE(result.ok, result.detail);
  }
}
