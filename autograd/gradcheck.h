// gradcheck: analytic gradients of f against central finite differences, in f64 on the CPU.
// The output is projected on a fixed random tensor r, L = sum(f(x) * r), so one backward pass
// checks the whole Jacobian-transpose product J^T r against (L(x + eps) - L(x - eps)) / 2 eps.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/var.h"

namespace relpos {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-6;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-4;
  uint64_t seed = 1234;  // of the projection r
};

struct GradcheckResult {
  bool ok = true;
  std::string detail;  // the first mismatching input and element, or empty
};

// inputs: CPU tensors; floating ones must be f64 and become Vars with requires_grad, the others
// (indices, masks) are passed as constant Vars. f must be deterministic (a dropout inside it
// must build its own Generator from a fixed seed on every call).
GradcheckResult gradcheck(const std::function<Var(const std::vector<Var>&)>& f,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace relpos
