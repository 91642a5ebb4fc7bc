// CUDA index ops: index_select / gather and index_add / scatter_add over strided operands. A
// device check counts out-of-range ids while the kernels skip them; after one stream sync (or
// when deferred checks run) the first bad id is reported exactly as core/cpu/index.cpp words it.
#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/index_kernels.h"
#include "core/cuda/strided_args.h"
#include "core/deferred_checks.h"
#include "core/transfers.h"

namespace relpos::cuda {

namespace {

// A 1-D index seen as a tensor of `shape` whose dim `dim` walks the index (stride 0 elsewhere).
Tensor broadcast_index(const Tensor& index, const Shape& shape, int dim) {
  Shape strides(shape.size(), 0);
  strides[dim] = index.stride(0);
  return index.as_strided(shape, strides, index.offset());
}

// t seen with `shape` (no larger than t off `dim`) and stride 0 along `dim`: the element a
// position reaches with id 0; the kernels add id * t.stride(dim).
Tensor at_id_zero(const Tensor& t, const Shape& shape, int dim) {
  Shape strides = t.strides();
  strides[dim] = 0;
  return t.as_strided(shape, strides, t.offset());
}

// The ids of `index` checked on the device against [0, bound): queued first, read by finish().
class IdCheck {
 public:
  IdCheck(const char* op, const Tensor& index, int64_t bound, cudaStream_t stream)
      : op_(op), index_(index), bound_(bound), stream_(stream) {
    status_ = Tensor::empty({2}, DType::i64, index.device());  // status: [count, first position]
    RELPOS_CUDA_CHECK(
        op, launch_check_ids(index.dtype(), strided_args<1>(op, {&index}), bound,
                             static_cast<unsigned long long*>(status_.raw_data()), stream));
  }

  // Throws "[op] index v is out of range [0, bound) for dim d of x (k of n ids out of range)" for
  // the first bad id in row-major order: after one stream sync, or, while checks are deferred
  // (core/deferred_checks.h), when the queue runs.
  void finish(int dim, const Tensor& x) const {
    if (!device_checks_deferred()) return report(dim, x.str());
    const IdCheck self = *this;
    defer_device_check(status_, [self, dim, x_str = x.str()] { self.report(dim, x_str); });
  }

  // Waits for the stream and throws if an id was out of range.
  void report(int dim, const std::string& x_str) const {
    unsigned long long status[2] = {0, 0};  // status: [count, first position]
    count_device_to_host_copy();
    RELPOS_CUDA_CHECK(op_, cudaMemcpyAsync(status, status_.raw_data(), sizeof(status),
                                           cudaMemcpyDeviceToHost, stream_));
    RELPOS_CUDA_CHECK(op_, cudaStreamSynchronize(stream_));
    if (status[0] == 0) return;
    const auto first = static_cast<int64_t>(status[1]);
    const int64_t id =
        index_.reshape({index_.numel()}).slice(0, first, first + 1).to_vector<int64_t>()[0];
    fail(op_, "index {} is out of range [0, {}) for dim {} of {} ({} of {} ids out of range)", id,
         bound_, dim, x_str, static_cast<int64_t>(status[0]), index_.numel());
  }

 private:
  const char* op_;
  Tensor index_;
  int64_t bound_;
  cudaStream_t stream_;
  Tensor status_;
};

// out[p] = x[p with coordinate dim replaced by index[p]]; out and index share a shape.
void gather_any(const char* op, const Tensor& x, int dim, const Tensor& checked,
                const Tensor& index, const Tensor& out) {
  DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_of(out.device());
  const IdCheck check(op, checked, x.size(dim), stream);
  if (x.size(dim) == 0) check.report(dim, x.str());  // every id is out of range: throws
  const Tensor x0 = at_id_zero(x, out.shape(), dim);
  RELPOS_CUDA_CHECK(
      op, launch_gather(x.dtype(), index.dtype(), strided_args<3>(op, {&out, &index, &x0}),
                        x.stride(dim), x.size(dim), stream));
  check.finish(dim, x);
}

// out[p with coordinate dim replaced by index[p]] += src[p] for every position p of index.
void scatter_add_any(const char* op, int dim, const Tensor& checked, const Tensor& index,
                     const Tensor& src, const Tensor& out) {
  DeviceGuard guard(out.device());
  const cudaStream_t stream = stream_of(out.device());
  const IdCheck check(op, checked, out.size(dim), stream);
  if (out.size(dim) == 0) check.finish(dim, out);  // every id is out of range: throws
  const Tensor src_p = src.as_strided(index.shape(), src.strides(), src.offset());
  const Tensor out0 = at_id_zero(out, index.shape(), dim);
  RELPOS_CUDA_CHECK(op, launch_scatter_add(out.dtype(), index.dtype(),
                                           strided_args<3>(op, {&src_p, &index, &out0}),
                                           out.stride(dim), out.size(dim), stream));
  check.finish(dim, out);
}

}  // namespace

void index_select(const Tensor& x, int dim, const Tensor& index, const Tensor& out) {
  if (index.numel() == 0) return;
  gather_any("index_select", x, dim, index, broadcast_index(index, out.shape(), dim), out);
}

void gather(const Tensor& x, int dim, const Tensor& index, const Tensor& out) {
  if (index.numel() == 0) return;
  gather_any("gather", x, dim, index, index, out);
}

void scatter_add(int dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  if (index.numel() == 0) return;
  scatter_add_any("scatter_add", dim, index, index, src, out);
}

void index_add(int dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  if (index.numel() == 0) return;
  scatter_add_any("index_add", dim, index, broadcast_index(index, src.shape(), dim), src, out);
}

}  // namespace relpos::cuda
