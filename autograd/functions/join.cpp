// cat, stack, pad, slice_assign. Each output element comes from exactly one input element (or a
// constant), so every backward hands each input its own region of the gradient.
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {

namespace {
std::vector<Tensor> values_of(const std::vector<Var>& xs) {
  std::vector<Tensor> values;
  for (const Var& x : xs) values.push_back(x.value());
  return values;
}
}  // namespace

Var cat(const std::vector<Var>& xs, int64_t dim) {
  Tensor out = cat(values_of(xs), dim);
  const int d = normalize_dim(dim, out.dim(), "cat");
  std::vector<int64_t> sizes;  // each input's extent along d
  std::vector<bool> needs;
  for (const Var& x : xs) {
    sizes.push_back(x.size(d));
    needs.push_back(x.requires_grad());
  }
  return make_result("cat", out, xs, [d, sizes, needs](const Tensor& g) {
    std::vector<Tensor> grads;
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      grads.push_back(needs[i] ? g.slice(d, start, start + sizes[i]) : Tensor());
      start += sizes[i];
    }
    return grads;
  });
}

Var stack(const std::vector<Var>& xs, int64_t dim) {
  Tensor out = stack(values_of(xs), dim);
  const int d = normalize_dim(dim, out.dim(), "stack");
  std::vector<bool> needs;
  for (const Var& x : xs) needs.push_back(x.requires_grad());
  return make_result("stack", out, xs, [d, needs](const Tensor& g) {
    std::vector<Tensor> grads;
    for (size_t i = 0; i < needs.size(); ++i)
      grads.push_back(needs[i] ? g.select(d, static_cast<int64_t>(i)) : Tensor());
    return grads;
  });
}

Var pad(const Var& x, const std::vector<int64_t>& pads, double value) {
  // pads = {before_last, after_last, before_second_last, ...}: dx is the unpadded window of g.
  return make_result("pad", pad(x.value(), pads, value), {x},
                     [pads, shape = x.shape()](const Tensor& g) {
                       Tensor dx = g;
                       const int rank = static_cast<int>(shape.size());
                       for (size_t i = 0; 2 * i < pads.size(); ++i) {
                         const int d = rank - 1 - static_cast<int>(i);
                         dx = dx.slice(d, pads[2 * i], pads[2 * i] + shape[d]);
                       }
                       return std::vector<Tensor>{dx};
                     });
}

Var slice_assign(const Var& x, int64_t dim, int64_t start, int64_t end, const Var& src) {
  // out = x outside the slice, src (broadcast) inside: dx = g with the slice zeroed,
  // dsrc = the slice of g reduced to src's shape.
  const bool gx = x.requires_grad(), gsrc = src.requires_grad();
  Tensor out = slice_assign(x.value(), dim, start, end, src.value());
  return make_result("slice_assign", out, {x, src},
                     [dim, start, end, gx, gsrc, src_shape = src.shape()](const Tensor& g) {
                       const Tensor zero = zeros({}, g.dtype(), g.device());
                       return std::vector<Tensor>{
                           gx ? slice_assign(g, dim, start, end, zero) : Tensor(),
                           gsrc ? sum_to(g.slice(dim, start, end), src_shape) : Tensor()};
                     });
}

}  // namespace relpos
