// CUDA backend: sum / max / logsumexp over any dims, argmax, all_finite. x is taken in memory
// order (as on the CPU) and its dims merged into kept/reduced groups; one reduced group becomes
// x: [O, R, I] for reduce_kernels.cu, several are first permuted behind the kept ones.
#include <algorithm>
#include <limits>
#include <numeric>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/reduce_kernels.h"
#include "core/transfers.h"

namespace relpos::cuda {

namespace {

// Calls f(xm, dm, om): xm is x permuted into memory order (decreasing strides) and contiguous, dm
// are `dims` renumbered for xm (sorted), om is `out` in xm's dim order: a view of out when that
// view is contiguous, else a temporary copied back into out afterwards.
template <typename F>
void in_memory_order(const Tensor& x, const std::vector<int>& dims, const Tensor& out, F&& f) {
  std::vector<int64_t> perm(x.dim());
  std::iota(perm.begin(), perm.end(), 0);
  if (!x.is_contiguous())
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  std::vector<int> dm;
  for (int d : dims) dm.push_back(static_cast<int>(inv[d]));
  std::sort(dm.begin(), dm.end());
  const Tensor xm = x.permute(perm).contiguous();
  const Tensor om_view = out.permute(perm);
  if (om_view.is_contiguous()) {
    f(xm, dm, om_view);
    return;
  }
  const Tensor om = Tensor::empty(om_view.shape(), out.dtype(), out.device());
  f(xm, dm, om);
  copy(om.permute(inv), out);
}

// xm (contiguous) reduced over dm as [O, R, I]. Size-1 dims are dropped and neighbours of the same
// kind merged; when more than one reduced group remains, xm is replaced by a copy with the kept
// dims (in order) ahead of the reduced ones, so I = 1. The kept order, hence om's, is unchanged.
struct ReduceView {
  Tensor x;
  int64_t O = 1, R = 1, I = 1;
};

ReduceView reduce_view(const Tensor& xm, const std::vector<int>& dm) {
  auto reduced = [&](int d) { return std::binary_search(dm.begin(), dm.end(), d); };
  std::vector<std::pair<int64_t, bool>> groups;  // (size, reduced), outermost first
  for (int d = 0; d < xm.dim(); ++d) {
    if (xm.size(d) == 1) continue;
    if (!groups.empty() && groups.back().second == reduced(d))
      groups.back().first *= xm.size(d);
    else
      groups.push_back({xm.size(d), reduced(d)});
  }
  ReduceView v{xm};
  const auto n_reduced =
      std::count_if(groups.begin(), groups.end(), [](const auto& g) { return g.second; });
  if (n_reduced == 0) {  // nothing of size > 1 is reduced: each output is one element
    v.I = xm.numel();
    return v;
  }
  if (n_reduced == 1) {
    bool after = false;
    for (const auto& [size, red] : groups) {
      if (red) {
        v.R = size;
        after = true;
      } else {
        (after ? v.I : v.O) *= size;
      }
    }
    return v;
  }
  std::vector<int64_t> order;  // kept dims, then reduced dims
  for (int d = 0; d < xm.dim(); ++d)
    if (!reduced(d)) order.push_back(d);
  for (int d : dm) order.push_back(d);
  v.x = xm.permute(order).contiguous();
  for (int d = 0; d < xm.dim(); ++d) (reduced(d) ? v.R : v.O) *= xm.size(d);
  return v;
}

// Scratch for a split plan, counted by the caching allocator like any tensor.
Tensor scratch_for(const ReducePlan& plan, Device device) {
  return plan.scratch_bytes > 0 ? Tensor::empty({plan.scratch_bytes}, DType::u8, device) : Tensor();
}

}  // namespace

void reduce(ReduceOp op, const Tensor& x, const std::vector<int>& dims, const Tensor& out) {
  // x: [...] any strides; out: x's shape with dims set to 1, contiguous.
  DeviceGuard guard(out.device());
  if (out.numel() == 0) return;
  if (x.numel() == 0) {  // empty reduction: the identity (sum 0, logsumexp -inf)
    fill(out, op == ReduceOp::sum ? 0.0 : -std::numeric_limits<double>::infinity());
    return;
  }
  in_memory_order(
      x, dims, out, [&](const Tensor& xm, const std::vector<int>& dm, const Tensor& om) {
        const ReduceView v = reduce_view(xm, dm);
        const ReducePlan plan = plan_reduce(v.O, v.R, v.I);
        const Tensor scratch = scratch_for(plan, out.device());
        RELPOS_CUDA_CHECK("reduce",
                          launch_reduce(op, v.x.dtype(), plan, v.x.raw_data(), om.raw_data(),
                                        scratch.defined() ? scratch.raw_data() : nullptr,
                                        stream_of(out.device())));
      });
}

void argmax(const Tensor& x, int dim, const Tensor& out) {
  // x: [...] any strides, seen in memory order as [O, K, I]; out: x's shape with dim set to 1.
  DeviceGuard guard(out.device());
  if (out.numel() == 0) return;
  in_memory_order(x, {dim}, out,
                  [&](const Tensor& xm, const std::vector<int>& dm, const Tensor& om) {
                    int64_t O = 1, I = 1;
                    for (int d = 0; d < dm[0]; ++d) O *= xm.size(d);
                    for (int d = dm[0] + 1; d < xm.dim(); ++d) I *= xm.size(d);
                    const ReducePlan plan = plan_reduce(O, xm.size(dm[0]), I);
                    const Tensor scratch = scratch_for(plan, out.device());
                    RELPOS_CUDA_CHECK(
                        "argmax", launch_argmax(xm.dtype(), plan, xm.raw_data(), om.data<int64_t>(),
                                                scratch.defined() ? scratch.raw_data() : nullptr,
                                                stream_of(out.device())));
                  });
}

bool all_finite(const Tensor& x) {
  // x: [...] floating (the entry point answers integer dtypes), read as [numel].
  DeviceGuard guard(x.device());
  const Tensor xc = x.contiguous();
  const Tensor flag = Tensor::empty({1}, DType::i32, x.device());  // 1 once a NaN/Inf is seen
  const cudaStream_t stream = stream_of(x.device());
  RELPOS_CUDA_CHECK("all_finite", cudaMemsetAsync(flag.raw_data(), 0, sizeof(int), stream));
  RELPOS_CUDA_CHECK("all_finite", launch_find_nonfinite(xc.dtype(), xc.raw_data(), xc.numel(),
                                                        flag.data<int32_t>(), stream));
  int found = 0;
  count_device_to_host_copy();
  RELPOS_CUDA_CHECK("all_finite", cudaMemcpyAsync(&found, flag.raw_data(), sizeof(int),
                                                  cudaMemcpyDeviceToHost, stream));
  RELPOS_CUDA_CHECK("all_finite", cudaStreamSynchronize(stream));
  return found == 0;
}

}  // namespace relpos::cuda
