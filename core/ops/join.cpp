// Entry points: cat, stack, pad, slice_assign. Each is composed from views and copy_ (slice the
// output, copy the input into it), so every backend gets them from its copy kernel.
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {
// All xs defined, on one device, of one dtype; the list is non-empty.
void check_list(const char* op, const std::vector<Tensor>& xs) {
  RELPOS_CHECK(!xs.empty(), op, "needs at least one tensor, got an empty list");
  for (size_t i = 0; i < xs.size(); ++i) {
    check_same_device(op, {&xs[0], &xs[i]});
    check_same_dtype(op, {&xs[0], &xs[i]});
  }
}
}  // namespace

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  check_list("cat", xs);
  const Tensor& first = xs[0];
  const int d = normalize_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();  // out: first's shape with shape[d] = sum of sizes along d
  shape[d] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    bool match = xs[i].dim() == first.dim();
    for (int k = 0; match && k < first.dim(); ++k) match = k == d || xs[i].size(k) == first.size(k);
    RELPOS_CHECK(match, "cat",
                 "tensor {} is {} but tensor 0 is {}; sizes must match except in dim {}", i,
                 xs[i].str(), first.str(), d);
    shape[d] += xs[i].size(d);
  }
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  int64_t start = 0;
  for (const Tensor& x : xs) {
    copy_(out.slice(d, start, start + x.size(d)), x);
    start += x.size(d);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  check_list("stack", xs);
  const int d = normalize_dim(dim, xs[0].dim() + 1, "stack");
  std::vector<Tensor> parts;  // each: [..., 1 (at d), ...]
  for (size_t i = 0; i < xs.size(); ++i) {
    RELPOS_CHECK(xs[i].shape() == xs[0].shape(), "stack",
                 "tensor {} is {} but tensor 0 is {}; all shapes must be equal", i, xs[i].str(),
                 xs[0].str());
    parts.push_back(xs[i].unsqueeze(d));
  }
  return cat(parts, d);
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  check_defined("pad", x);
  RELPOS_CHECK(pads.size() % 2 == 0 && pads.size() / 2 <= static_cast<size_t>(x.dim()), "pad",
               "pads {} must hold (before, after) pairs for at most the {} dims of {}",
               shape_str(pads), x.dim(), x.str());
  Shape shape = x.shape();  // out: x's shape grown by the pads, last dim first
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const int64_t before = pads[2 * p], after = pads[2 * p + 1];
    RELPOS_CHECK(before >= 0 && after >= 0, "pad", "pads {} must be non-negative", shape_str(pads));
    shape[x.dim() - 1 - p] += before + after;
  }
  Tensor out = full(shape, value, x.dtype(), x.device());
  Tensor inside = out;  // the region of out that holds x
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(p);
    inside = inside.slice(d, pads[2 * p], pads[2 * p] + x.size(d));
  }
  copy_(inside, x);
  return out;
}

Tensor slice_assign(const Tensor& x, int64_t dim, int64_t start, int64_t end, const Tensor& src) {
  check_same_device("slice_assign", {&x, &src});
  check_same_dtype("slice_assign", {&x, &src});
  Tensor out = x.clone();  // out: x's shape
  const Tensor region = out.slice(normalize_dim(dim, x.dim(), "slice_assign"), start, end);
  RELPOS_CHECK(broadcast_shapes(src.shape(), region.shape(), "slice_assign") == region.shape(),
               "slice_assign", "src {} does not broadcast to the slice {} of {}", src.str(),
               shape_str(region.shape()), x.str());
  copy_(region, src);
  return out;
}

}  // namespace relpos
