#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "core/ops.h"

namespace relpos {

namespace {

// L = sum(f(xs) * r) evaluated without recording a graph.
double projected_output(const std::function<Var(const std::vector<Var>&)>& f,
                        const std::vector<Tensor>& xs, const Tensor& r) {
  NoGradGuard no_grad;
  std::vector<Var> vars;
  for (const Tensor& x : xs) vars.emplace_back(x, false);
  return sum(mul(f(vars).value(), r)).item();
}

}  // namespace

GradcheckResult gradcheck(const std::function<Var(const std::vector<Var>&)>& f,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  std::vector<Tensor> xs;
  std::vector<Var> vars;
  for (const Tensor& in : inputs) {
    RELPOS_CHECK(in.device().is_cpu(), "gradcheck", "inputs must be CPU tensors, got {}", in.str());
    RELPOS_CHECK(!is_floating(in.dtype()) || in.dtype() == DType::f64, "gradcheck",
                 "floating inputs must be f64 (finite differences in f32 are too coarse), got {}",
                 in.str());
    xs.push_back(in.clone());
    vars.emplace_back(xs.back(), is_floating(in.dtype()));
  }

  const Var out = f(vars);
  RELPOS_CHECK(out.dtype() == DType::f64, "gradcheck", "f must return f64, got {}",
               out.value().str());
  Generator gen(options.seed);
  const Tensor r = randn(out.shape(), gen, 0, 1, DType::f64);
  if (out.requires_grad()) out.backward(r);

  for (size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) continue;
    const Tensor analytic =
        vars[i].grad().defined() ? vars[i].grad().contiguous() : zeros_like(xs[i]);
    const double* a = analytic.data<double>();
    double* x = xs[i].data<double>();  // contiguous clone: perturbed in place
    for (int64_t j = 0; j < xs[i].numel(); ++j) {
      const double saved = x[j];
      x[j] = saved + options.eps;
      const double plus = projected_output(f, xs, r);
      x[j] = saved - options.eps;
      const double minus = projected_output(f, xs, r);
      x[j] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      if (!(std::abs(a[j] - numeric) <= options.atol + options.rtol * std::abs(numeric))) {
        return {false,
                fmt::format("input {} element {}: analytic {:.10g} numeric {:.10g} (shape {})", i,
                            j, a[j], numeric, shape_str(xs[i].shape()))};
      }
    }
  }
  return {};
}

}  // namespace relpos
