// Views and casts. Forward returns a view of the input's value (no copy); backward maps the
// gradient back to the input's layout: the inverse view, or a scatter into zeros through the same
// view (slice, select, diagonal), or a sum over broadcast dims (expand).
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {

namespace {

// Gradient of a shape-only change (reshape, unsqueeze, squeeze, flatten): the same elements in
// the same row-major order, so reshaping back is exact.
Var reshaped(const char* name, const Var& x, Tensor out) {
  return make_result(name, std::move(out), {x}, [shape = x.shape()](const Tensor& g) {
    return std::vector<Tensor>{g.reshape(shape)};
  });
}

// Gradient of a view that picks a subset of x's elements: zeros of x's shape with g written into
// the same view of them.
template <typename ViewOf>
Var scattered(const char* name, const Var& x, ViewOf view_of) {
  Tensor out = view_of(x.value());
  return make_result(
      name, std::move(out), {x},
      [shape = x.shape(), dtype = x.dtype(), device = x.device(), view_of](const Tensor& g) {
        Tensor dx = zeros(shape, dtype, device);
        copy_(view_of(dx), g);
        return std::vector<Tensor>{dx};
      });
}

}  // namespace

Var reshape(const Var& x, const Shape& shape) {
  return reshaped("reshape", x, x.value().reshape(shape));
}

Var transpose(const Var& x, int64_t d0, int64_t d1) {
  return make_result("transpose", x.value().transpose(d0, d1), {x}, [d0, d1](const Tensor& g) {
    return std::vector<Tensor>{g.transpose(d0, d1)};
  });
}

Var permute(const Var& x, const std::vector<int64_t>& dims) {
  Tensor out = x.value().permute(dims);  // validates dims
  // out dim i is x dim dims[i], so x dim dims[i] is g dim i.
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[normalize_dim(dims[i], x.dim(), "permute")] = static_cast<int64_t>(i);
  return make_result("permute", out, {x}, [inverse](const Tensor& g) {
    return std::vector<Tensor>{g.permute(inverse)};
  });
}

Var slice(const Var& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return scattered("slice", x, [=](const Tensor& t) { return t.slice(dim, start, end, step); });
}

Var select(const Var& x, int64_t dim, int64_t index) {
  return scattered("select", x, [=](const Tensor& t) { return t.select(dim, index); });
}

Var diagonal(const Var& x, int64_t offset, int64_t d0, int64_t d1) {
  return scattered("diagonal", x, [=](const Tensor& t) { return t.diagonal(offset, d0, d1); });
}

Var expand(const Var& x, const Shape& shape) {
  return make_result("expand", x.value().expand(shape), {x}, [in = x.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, in)};
  });
}

Var unsqueeze(const Var& x, int64_t dim) {
  return reshaped("unsqueeze", x, x.value().unsqueeze(dim));
}

Var squeeze(const Var& x, int64_t dim) {
  return reshaped("squeeze", x, x.value().squeeze(dim));
}

Var flatten(const Var& x, int64_t start, int64_t end) {
  return reshaped("flatten", x, x.value().flatten(start, end));
}

Var contiguous(const Var& x) {
  return make_result("contiguous", x.value().contiguous(), {x},
                     [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Var cast(const Var& x, DType dtype) {
  RELPOS_CHECK(is_floating(x.dtype()) && is_floating(dtype), "cast",
               "a differentiable cast goes between floating dtypes, got {} to {}", x.value().str(),
               dtype_name(dtype));
  return make_result("cast", cast(x.value(), dtype), {x}, [from = x.dtype()](const Tensor& g) {
    return std::vector<Tensor>{cast(g, from)};
  });
}

}  // namespace relpos
