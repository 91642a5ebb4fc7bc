// Gradchecks of the broadcasting binary functions, where, masked_fill, matmul and bmm.
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tests/harness.h"

using namespace relpos;

namespace {
using Fn = std::function<Var(const std::vector<Var>&)>;

void check_grad(const Fn& f, const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(f, inputs);
  CHECK_MESSAGE(r.ok, r.detail);
}
Tensor rnd(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return test::random_tensor(s, DType::f64, seed, lo, hi);
}
}  // namespace

TEST_CASE("grad: add, sub, mul, div with broadcasting reduce to each input's shape") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 5}, {3, 5}}, {{3, 5}, {5}}, {{4, 1, 3}, {5, 1}}, {{1}, {2, 3}}, {{}, {3}}};
  for (const auto& [sa, sb] : cases) {
    RELPOS_INFO("shapes {} and {}", shape_str(sa), shape_str(sb));
    const Tensor a = rnd(sa, 1), b = rnd(sb, 2);
    check_grad([](const std::vector<Var>& v) { return add(v[0], v[1]); }, {a, b});
    check_grad([](const std::vector<Var>& v) { return sub(v[0], v[1]); }, {a, b});
    check_grad([](const std::vector<Var>& v) { return mul(v[0], v[1]); }, {a, b});
    // Divisors away from 0.
    check_grad([](const std::vector<Var>& v) { return div(v[0], v[1]); }, {a, rnd(sb, 3, 0.5, 2)});
  }
}

TEST_CASE("grad: maximum and minimum route the gradient, ties split in half") {
  const Tensor a = rnd({3, 7}, 4), b = rnd({7}, 5);  // no ties with probability 1
  check_grad([](const std::vector<Var>& v) { return maximum(v[0], v[1]); }, {a, b});
  check_grad([](const std::vector<Var>& v) { return minimum(v[0], v[1]); }, {a, b});
  const Var x(Tensor::from_vector<double>({1, 2, 3}, {3}), true);
  const Var y(Tensor::from_vector<double>({1, 5, 0}, {3}), true);
  sum(maximum(x, y)).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0.5, 0, 1});
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0.5, 1, 0});
}

TEST_CASE("grad: where and masked_fill pass gradients only where selected") {
  const Tensor cond = gt(rnd({4, 5}, 6), zeros({}, DType::f64));
  check_grad([cond](const std::vector<Var>& v) { return where(cond, v[0], v[1]); },
             {rnd({4, 5}, 7), rnd({5}, 8)});
  check_grad([cond](const std::vector<Var>& v) { return masked_fill(v[0], cond, -3.0); },
             {rnd({4, 5}, 9)});
}

TEST_CASE("grad: matmul in all four transpose modes, batched and broadcast") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      const Shape sa = ta ? Shape{2, 5, 3} : Shape{2, 3, 5};
      const Shape sb = tb ? Shape{4, 5} : Shape{5, 4};  // b broadcast over the batch
      check_grad([ta, tb](const std::vector<Var>& v) { return matmul(v[0], v[1], ta, tb); },
                 {rnd(sa, 10), rnd(sb, 11)});
      const Shape sb3 = tb ? Shape{2, 4, 5} : Shape{2, 5, 4};
      check_grad([ta, tb](const std::vector<Var>& v) { return bmm(v[0], v[1], ta, tb); },
                 {rnd(sa, 12), rnd(sb3, 13)});
    }
  // Non-contiguous operands (transposed views) give the same gradients.
  check_grad([](const std::vector<Var>& v) { return matmul(transpose(v[0], 0, 1), v[1]); },
             {rnd({5, 3}, 14), rnd({5, 2}, 15)});
}
