// Checks shared by the gradient tests of norm, fft, index and join: gradcheck with its report,
// bitwise equality with the core op, and backward from non-contiguous output gradients.
#pragma once

#include <functional>
#include <vector>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tests/harness.h"

namespace relpos::test {

using GradFn = std::function<Var(const std::vector<Var>&)>;

inline void check_grad(const GradFn& f, const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(f, inputs);
  CHECK_MESSAGE(r.ok, r.detail);
}

// Bitwise equality of shape, dtype and values (the Var function must call the core op itself).
inline void check_same(const Tensor& actual, const Tensor& expected) {
  CHECK(actual.shape() == expected.shape());
  CHECK(actual.dtype() == expected.dtype());
  CHECK(actual.to_vector<double>() == expected.to_vector<double>());
}

// The gradient of every input (undefined for index inputs) after f(inputs).backward(grad_out).
inline std::vector<Tensor> input_grads(const GradFn& f, const std::vector<Tensor>& inputs,
                                       const Tensor& grad_out) {
  std::vector<Var> vars;
  for (const Tensor& x : inputs) vars.emplace_back(x, is_floating(x.dtype()));
  f(vars).backward(grad_out);
  std::vector<Tensor> grads;
  for (const Var& v : vars) grads.push_back(v.grad());
  return grads;
}

// Backward from a strided view (test::strided_copy) and from a stride-0 expanded scalar gives the
// input gradients it gives from their contiguous copies. Only the layout differs, so the
// tolerance (1e-12) only allows for a kernel summing in another order.
inline void check_noncontiguous_grad(const GradFn& f, const std::vector<Tensor>& inputs) {
  std::vector<Var> consts;
  for (const Tensor& x : inputs) consts.emplace_back(x, false);
  const Shape shape = f(consts).shape();
  const Tensor r = random_tensor(shape, DType::f64, 777);
  for (const Tensor& g : {strided_copy(r), Tensor::scalar(0.7, DType::f64).expand(shape)}) {
    REQUIRE_FALSE(g.is_contiguous());
    const std::vector<Tensor> want = input_grads(f, inputs, g.contiguous());
    const std::vector<Tensor> got = input_grads(f, inputs, g);
    for (size_t i = 0; i < inputs.size(); ++i) {
      INFO("input " << i);
      REQUIRE(got[i].defined() == want[i].defined());
      if (want[i].defined()) CHECK_CLOSE(got[i], want[i], 1e-12, 1e-12);
    }
  }
}

}  // namespace relpos::test
