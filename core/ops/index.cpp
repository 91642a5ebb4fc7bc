// Entry points: index_select, embedding, gather, scatter_add, index_add. They check ranks and
// shapes (torch rules) and dispatch; the kernels check that every id is in range.
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {
// x and index (and src) defined, index i32/i64, all on one device; returns dim normalized.
int check_index_args(const char* op, const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined(op, x);
  check_not_bf16(op, x);
  check_index_dtype(op, index);
  check_same_device(op, {&x, &index});
  return normalize_dim(dim, x.dim(), op);
}

// index: rank of x, index.size(d) <= bound.size(d) for every d (except `dim` when dim >= 0).
void check_index_fits(const char* op, const Tensor& index, const Tensor& bound, int dim,
                      const char* bound_name) {
  RELPOS_CHECK(index.dim() == bound.dim(), op, "index {} must have the rank of {} {}", index.str(),
               bound_name, bound.str());
  for (int d = 0; d < index.dim(); ++d)
    RELPOS_CHECK(d == dim || index.size(d) <= bound.size(d), op,
                 "index {} is larger than {} {} in dim {}", index.str(), bound_name, bound.str(),
                 d);
}
}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const int d = check_index_args("index_select", x, dim, index);
  RELPOS_CHECK(index.dim() == 1, "index_select", "index must be 1-D, got {}", index.str());
  Shape shape = x.shape();  // out: x's shape with shape[d] = index.numel()
  shape[d] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  if (x.device().is_cpu())
    cpu::index_select(x, d, index, out);
  else
    cuda::index_select(x, d, index, out);
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  check_defined("embedding", weight, "weight");
  check_not_bf16("embedding", weight);
  check_index_dtype("embedding", ids);
  check_same_device("embedding", {&weight, &ids});
  RELPOS_CHECK(weight.dim() == 2, "embedding", "weight must be [V, D], got {}", weight.str());
  Shape shape = ids.shape();  // out: [*ids.shape, D]
  shape.push_back(weight.size(1));
  try {
    return index_select(weight, 0, ids.reshape({ids.numel()})).view(shape);
  } catch (const Error& e) {  // out-of-range ids: say which op the caller used
    fail("embedding", "{}", e.what());
  }
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const int d = check_index_args("gather", x, dim, index);
  check_index_fits("gather", index, x, d, "input");
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());  // out: index's shape
  if (x.device().is_cpu())
    cpu::gather(x, d, index, out);
  else
    cuda::gather(x, d, index, out);
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int d = check_index_args("scatter_add", x, dim, index);
  check_same_device("scatter_add", {&x, &src});
  check_same_dtype("scatter_add", {&x, &src});
  check_index_fits("scatter_add", index, src, -1, "src");
  check_index_fits("scatter_add", index, x, d, "input");
  Tensor out = x.clone();  // out: x's shape, accumulated into by the kernel
  if (x.device().is_cpu())
    cpu::scatter_add(d, index, src, out);
  else
    cuda::scatter_add(d, index, src, out);
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int d = check_index_args("index_add", x, dim, index);
  check_same_device("index_add", {&x, &src});
  check_same_dtype("index_add", {&x, &src});
  RELPOS_CHECK(index.dim() == 1, "index_add", "index must be 1-D, got {}", index.str());
  Shape want = x.shape();  // src: x's shape with shape[d] = index.numel()
  want[d] = index.numel();
  RELPOS_CHECK(src.shape() == want, "index_add", "src {} must be {} for input {} and index {}",
               src.str(), shape_str(want), x.str(), index.str());
  Tensor out = x.clone();  // out: x's shape, accumulated into by the kernel
  if (x.device().is_cpu())
    cpu::index_add(d, index, src, out);
  else
    cuda::index_add(d, index, src, out);
  return out;
}

}  // namespace relpos
