// Reductions (sum, mean, max, logsumexp over any dims) and cumsum. A reduction's gradient is the
// output gradient reshaped to the keepdim shape and broadcast back over the reduced dims.
#include "autograd/functions.h"

namespace relpos {

namespace {

// x's shape with every reduced dim set to 1 (empty dims = all dims): a keepdim result's shape.
Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& dims, const char* op) {
  Shape keep = shape;
  if (dims.empty()) keep.assign(shape.size(), 1);
  for (int64_t d : dims) keep[normalize_dim(d, static_cast<int>(shape.size()), op)] = 1;
  return keep;
}

// g (the reduced output's gradient) as a stride-0 view over the input's shape.
Tensor broadcast_back(const Tensor& g, const Shape& keep, const Shape& shape) {
  return g.reshape(keep).expand(shape);
}

}  // namespace

Var sum(const Var& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = sum(x.value(), dims, keepdim);
  const Shape shape = x.shape(), keep = keepdim_shape(shape, dims, "sum");
  return make_result("sum", out, {x}, [shape, keep](const Tensor& g) {
    return std::vector<Tensor>{broadcast_back(g, keep, shape)};
  });
}

Var mean(const Var& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = mean(x.value(), dims, keepdim);
  const Shape shape = x.shape(), keep = keepdim_shape(shape, dims, "mean");
  int64_t count = 1;  // elements averaged into each output
  for (size_t i = 0; i < shape.size(); ++i)
    if (keep[i] == 1) count *= shape[i];
  return make_result("mean", out, {x}, [shape, keep, count](const Tensor& g) {
    return std::vector<Tensor>{
        broadcast_back(mul_scalar(g, 1.0 / static_cast<double>(count)), keep, shape)};
  });
}

Var max(const Var& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = max(x.value(), dims, keepdim);
  const Shape keep = keepdim_shape(x.shape(), dims, "max");
  // Every position equal to its maximum gets an equal share of the gradient (torch.amax).
  return make_result("max", out, {x},
                     [v = x.value(), out_keep = out.reshape(keep), keep, dims](const Tensor& g) {
                       const Tensor is_max = cast(eq(v, out_keep), g.dtype());   // x's shape
                       const Tensor ties = sum(is_max, dims, /*keepdim=*/true);  // keep
                       return std::vector<Tensor>{mul(is_max, div(g.reshape(keep), ties))};
                     });
}

Var logsumexp(const Var& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = logsumexp(x.value(), dims, keepdim);
  const Shape keep = keepdim_shape(x.shape(), dims, "logsumexp");
  // d lse / dx = exp(x - lse): the softmax over the reduced dims.
  return make_result("logsumexp", out, {x},
                     [v = x.value(), out_keep = out.reshape(keep), keep](const Tensor& g) {
                       const Tensor weights = exp(sub(v, out_keep));  // x's shape
                       return std::vector<Tensor>{mul(g.reshape(keep), weights)};
                     });
}

Var cumsum(const Var& x, int64_t dim, bool reverse) {
  // out_i = sum_{j <= i} x_j, so dx_j = sum_{i >= j} g_i: the scan in the other direction.
  return make_result(
      "cumsum", cumsum(x.value(), dim, reverse), {x},
      [dim, reverse](const Tensor& g) { return std::vector<Tensor>{cumsum(g, dim, !reverse)}; });
}

}  // namespace relpos
