// Gradchecks of index_select, embedding, gather, scatter_add and index_add
// (autograd/functions/index.cpp) with repeated indices (gradients must accumulate), every dim,
// i32 and i64 indices, strided inputs and non-contiguous output gradients.
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

// These functions only move and add values: central differences are exact up to rounding, so
// the default gradcheck tolerances (atol 1e-6, rtol 1e-4) have a wide margin.

TEST_CASE("grad: index_select gradcheck over every dim with repeated indices") {
  const Tensor x = rnd({5, 7, 3}, 1);
  for (int64_t dim : {0, 1, 2, -1}) {
    const int64_t bound = x.size(dim);
    for (DType idt : {DType::i64, DType::i32}) {
      INFO("dim " << dim << " index " << dtype_name(idt));
      // 2 * bound + 1 entries drawn from [0, bound): repeats are certain.
      const Tensor index = test::random_indices({2 * bound + 1}, bound, 2 + dim, idt);
      const auto f = [dim, &index](const std::vector<Var>& v) {
        return index_select(v[0], dim, index);
      };
      check_grad(f, {x});
      check_noncontiguous_grad(f, {x});
      check_same(f({Var(x)}).value(), index_select(x, dim, index));
    }
  }
  const Tensor index = Tensor::from_vector<int64_t>({2, 0, 2, 2}, {4});
  check_grad(
      [&](const std::vector<Var>& v) { return index_select(transpose(v[0], 0, 1), 1, index); },
      {rnd({3, 5}, 3)});
}

TEST_CASE("grad: embedding gradcheck; repeated ids accumulate their gradient rows") {
  const Tensor weight = rnd({6, 5}, 4);
  // ids [3, 4]: id 2 appears 3 times, id 5 twice, ids 1 and 4 never.
  const Tensor ids = Tensor::from_vector<int64_t>({2, 0, 5, 2, 3, 2, 5, 0, 0, 3, 3, 3}, {3, 4});
  for (DType idt : {DType::i64, DType::i32}) {
    INFO("ids " << dtype_name(idt));
    const Tensor id = cast(ids, idt);
    const auto f = [&id](const std::vector<Var>& v) { return embedding(v[0], id); };
    check_grad(f, {weight});
    check_noncontiguous_grad(f, {weight});
    check_same(f({Var(weight)}).value(), embedding(weight, id));
  }
  // Naive reference: dweight[v] = sum of the gradient rows at positions whose id is v.
  Var w(weight, true);
  const Tensor g = rnd({3, 4, 5}, 5);
  embedding(w, ids).backward(g);
  std::vector<double> want(6 * 5, 0.0);
  const std::vector<int64_t> idv = ids.to_vector<int64_t>();
  const std::vector<double> gv = g.to_vector<double>();
  for (size_t p = 0; p < idv.size(); ++p)
    for (int64_t d = 0; d < 5; ++d) want[idv[p] * 5 + d] += gv[p * 5 + d];
  CHECK_CLOSE(w.grad(), Tensor::from_vector(want, {6, 5}), 1e-14, 1e-14);  // sums of <= 4 terms
}

TEST_CASE("grad: gather gradcheck over every dim; repeated positions accumulate") {
  const Tensor x = rnd({4, 5, 3}, 6);
  for (int64_t dim : {0, 1, 2, -2}) {
    INFO("dim " << dim);
    // index [3, 4, 2] but 6 along dim, entries in [0, x.size(dim)): smaller than x off `dim`
    // and larger along it, so some positions are read several times.
    Shape ishape{3, 4, 2};
    ishape[normalize_dim(dim, 3, "test")] = 6;
    const Tensor index = test::random_indices(ishape, x.size(dim), 7 + dim);
    const auto f = [dim, &index](const std::vector<Var>& v) { return gather(v[0], dim, index); };
    check_grad(f, {x});
    check_noncontiguous_grad(f, {x});
    check_same(f({Var(x)}).value(), gather(x, dim, index));
    check_grad(
        [dim, &index](const std::vector<Var>& v) {
          return gather(permute(v[0], {1, 2, 0}), dim, index);
        },
        {rnd({3, 4, 5}, 8)});
  }
}

TEST_CASE("grad: scatter_add gradcheck on x and src over every dim, colliding targets") {
  const Tensor x = rnd({4, 5, 3}, 9);
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    Shape sshape{4, 5, 3};
    sshape[normalize_dim(dim, 3, "test")] = 6;  // more sources than targets along dim: collisions
    const Tensor index = test::random_indices(sshape, x.size(dim), 10 + dim);
    const Tensor src = rnd(sshape, 11);
    const auto f = [dim, &index](const std::vector<Var>& v) {
      return scatter_add(v[0], dim, index, v[1]);
    };
    check_grad(f, {x, src});
    check_noncontiguous_grad(f, {x, src});
    check_same(f({Var(x), Var(src)}).value(), scatter_add(x, dim, index, src));
  }
  // Only src needs a gradient.
  const Var cx(x);
  const Tensor index = test::random_indices({2, 5, 3}, 4, 12);
  check_grad([&](const std::vector<Var>& v) { return scatter_add(cx, 0, index, v[0]); },
             {rnd({2, 5, 3}, 13)});
}

TEST_CASE("grad: index_add gradcheck on x and src over every dim, repeated indices") {
  const Tensor x = rnd({5, 4, 3}, 14);
  for (int64_t dim : {0, 1, 2, -3}) {
    INFO("dim " << dim);
    const int64_t bound = x.size(dim);
    const Tensor index = test::random_indices({bound + 2}, bound, 15 + dim);
    Shape sshape = x.shape();
    sshape[normalize_dim(dim, 3, "test")] = bound + 2;
    const Tensor src = rnd(sshape, 16);
    const auto f = [dim, &index](const std::vector<Var>& v) {
      return index_add(v[0], dim, index, v[1]);
    };
    check_grad(f, {x, src});
    check_noncontiguous_grad(f, {x, src});
    check_same(f({Var(x), Var(src)}).value(), index_add(x, dim, index, src));
  }
  const Var cx(x);
  const Tensor index = Tensor::from_vector<int64_t>({1, 1, 3}, {3});
  check_grad([&](const std::vector<Var>& v) { return index_add(cx, 1, index, v[0]); },
             {rnd({5, 3, 3}, 17)});
}
