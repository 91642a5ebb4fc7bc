// Entry points of the reductions sum, mean, max, logsumexp (over any set of dims) and argmax:
// normalize the dims, check dtypes and empty reductions, allocate the keepdim output, dispatch.
#include <algorithm>

#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"

namespace relpos {

namespace {

// The reduced dims, sorted and non-negative; empty `dims` means all of x's dims.
std::vector<int> reduced_dims(const char* op, const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<int> out;
  if (dims.empty())
    for (int d = 0; d < x.dim(); ++d) out.push_back(d);
  for (int64_t d : dims) out.push_back(normalize_dim(d, x.dim(), op));
  std::sort(out.begin(), out.end());
  RELPOS_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), op,
               "dims [{}] name a dim twice (x is {})", fmt::join(dims, ", "), x.str());
  return out;
}

int64_t reduced_count(const Tensor& x, const std::vector<int>& rdims) {
  int64_t n = 1;
  for (int d : rdims) n *= x.size(d);
  return n;
}

// Runs the kernel into an x-rank output with the reduced dims of size 1, then drops them unless
// keepdim.
Tensor reduce_op(ReduceOp op, const char* name, const Tensor& x, const std::vector<int>& rdims,
                 bool keepdim, DType out_dtype) {
  check_not_bf16(name, x);
  Shape kept = x.shape(), squeezed;
  for (int d : rdims) kept[d] = 1;
  for (int d = 0; d < x.dim(); ++d)
    if (!std::binary_search(rdims.begin(), rdims.end(), d)) squeezed.push_back(x.size(d));
  Tensor out = Tensor::empty(kept, out_dtype, x.device());
  if (x.device().is_cpu())
    cpu::reduce(op, x, rdims, out);
  else
    cuda::reduce(op, x, rdims, out);
  return keepdim ? out : out.view(squeezed);
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_defined("sum", x);
  // Integer sums are exact in int64 (a u8 mask sums to a count).
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : DType::i64;
  return reduce_op(ReduceOp::sum, "sum", x, reduced_dims("sum", x, dims), keepdim, out_dtype);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_floating("mean", x);
  const std::vector<int> rdims = reduced_dims("mean", x, dims);
  const Tensor s = reduce_op(ReduceOp::sum, "mean", x, rdims, keepdim, x.dtype());
  // An empty reduction gives 0 * inf = NaN, as torch.mean.
  return mul_scalar(s, 1.0 / static_cast<double>(reduced_count(x, rdims)));
}

Tensor max(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_defined("max", x);
  const std::vector<int> rdims = reduced_dims("max", x, dims);
  RELPOS_CHECK(reduced_count(x, rdims) > 0, "max",
               "cannot take the max of an empty reduction: x is {}, dims [{}]", x.str(),
               fmt::join(rdims, ", "));
  return reduce_op(ReduceOp::max, "max", x, rdims, keepdim, x.dtype());
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_floating("logsumexp", x);
  const std::vector<int> rdims = reduced_dims("logsumexp", x, dims);
  return reduce_op(ReduceOp::logsumexp, "logsumexp", x, rdims, keepdim, x.dtype());
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  check_defined("argmax", x);
  check_not_bf16("argmax", x);
  const int d = normalize_dim(dim, x.dim(), "argmax");
  RELPOS_CHECK(x.size(d) > 0, "argmax", "dim {} of {} is empty", dim, x.str());
  Shape kept = x.shape();
  kept[d] = 1;
  Tensor out = Tensor::empty(kept, DType::i64, x.device());
  if (x.device().is_cpu())
    cpu::argmax(x, d, out);
  else
    cuda::argmax(x, d, out);
  return keepdim ? out : out.squeeze(d);
}

Tensor sum_of_squares(const std::vector<Tensor>& xs) {
  RELPOS_CHECK(!xs.empty(), "sum_of_squares", "needs at least one tensor");
  std::vector<Tensor> contiguous;
  contiguous.reserve(xs.size());
  for (const Tensor& x : xs) {
    check_floating("sum_of_squares", x);
    check_same_device("sum_of_squares", {&xs.front(), &x});
    contiguous.push_back(x.contiguous());
  }
  const Device device = xs.front().device();
  Tensor out = Tensor::empty({}, DType::f64, device);
  if (device.is_cpu())
    cpu::sum_of_squares(contiguous, out);
  else
    cuda::sum_of_squares(contiguous, out);
  return out;
}

}  // namespace relpos
