// CUDA backend: softmax / log_softmax and their backward along one dim, on contiguous buffers seen
// as [outer, D, inner]. Our fused kernels (softmax_kernels.cu) by default; with the environment
// variable RELPOS_CUDNN_SOFTMAX=1, cuDNN's softmax instead (for benchmarking the two).
#include <climits>
#include <cstdlib>
#include <string_view>

#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/softmax_kernels.h"

namespace relpos::cuda {

bool use_cudnn_softmax() {
  const char* v = std::getenv("RELPOS_CUDNN_SOFTMAX");
  return v != nullptr && std::string_view(v) == "1";
}

namespace {

struct Dims {
  int64_t outer = 1, D = 1, inner = 1;
};

Dims split_dims(const Shape& shape, int dim) {
  Dims s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    (d < dim ? s.outer : d == dim ? s.D : s.inner) *= shape[d];
  return s;
}

// An NCHW descriptor [outer, D, inner, 1]: softmax over C (CUDNN_SOFTMAX_MODE_CHANNEL) is
// softmax over D. Owned (RAII): the descriptor is created by one member and shaped in the body,
// so a failure there still destroys it.
class SoftmaxDesc {
 public:
  SoftmaxDesc(const char* op, const Dims& s, DType dtype) : handle_(op) {
    RELPOS_CUDNN_CHECK(
        op, cudnnSetTensor4dDescriptor(get(), CUDNN_TENSOR_NCHW,
                                       dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT,
                                       static_cast<int>(s.outer), static_cast<int>(s.D),
                                       static_cast<int>(s.inner), 1));
  }
  cudnnTensorDescriptor_t get() const { return handle_.desc; }

 private:
  struct Handle {
    cudnnTensorDescriptor_t desc = nullptr;
    explicit Handle(const char* op) { RELPOS_CUDNN_CHECK(op, cudnnCreateTensorDescriptor(&desc)); }
    ~Handle() { cudnnDestroyTensorDescriptor(desc); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
  };
  Handle handle_;
};

// cuDNN takes int sizes; larger tensors stay on our kernels.
bool cudnn_fits(const Dims& s) {
  return s.outer * s.D * s.inner <= INT_MAX;
}

// cuDNN's alpha = 1, beta = 0 (y = softmax(x)), as doubles for f64 data and floats otherwise.
struct Scale {
  explicit Scale(DType dtype) : f64(dtype == DType::f64) {}
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  bool f64;
  const void* one() const { return f64 ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return f64 ? static_cast<const void*>(&d0) : &f0; }
};

}  // namespace

void softmax(const Tensor& x, int dim, bool log, const Tensor& out) {
  const char* op = log ? "log_softmax" : "softmax";
  DeviceGuard guard(out.device());
  const Tensor xc = x.contiguous();  // xc, out: [outer, D, inner]
  const Dims s = split_dims(x.shape(), dim);
  if (use_cudnn_softmax() && cudnn_fits(s)) {
    const SoftmaxDesc desc(op, s, x.dtype());
    const Scale k(x.dtype());
    RELPOS_CUDNN_CHECK(
        op, cudnnSoftmaxForward(context(out.device()).cudnn,
                                log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                CUDNN_SOFTMAX_MODE_CHANNEL, k.one(), desc.get(), xc.raw_data(),
                                k.zero(), desc.get(), out.raw_data()));
    return;
  }
  RELPOS_CUDA_CHECK(op, launch_softmax(x.dtype(), xc.raw_data(), out.raw_data(), s.outer, s.D,
                                       s.inner, log, stream_of(out.device())));
}

void softmax_backward(const Tensor& y, const Tensor& gy, int dim, bool log, const Tensor& gx) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  DeviceGuard guard(gx.device());
  const Tensor yc = y.contiguous(), gc = gy.contiguous();  // yc, gc, gx: [outer, D, inner]
  const Dims s = split_dims(y.shape(), dim);
  if (use_cudnn_softmax() && cudnn_fits(s)) {
    const SoftmaxDesc desc(op, s, y.dtype());
    const Scale k(y.dtype());
    RELPOS_CUDNN_CHECK(
        op, cudnnSoftmaxBackward(context(gx.device()).cudnn,
                                 log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                 CUDNN_SOFTMAX_MODE_CHANNEL, k.one(), desc.get(), yc.raw_data(),
                                 desc.get(), gc.raw_data(), k.zero(), desc.get(), gx.raw_data()));
    return;
  }
  RELPOS_CUDA_CHECK(
      op, launch_softmax_backward(y.dtype(), yc.raw_data(), gc.raw_data(), gx.raw_data(), s.outer,
                                  s.D, s.inner, log, stream_of(gx.device())));
}

}  // namespace relpos::cuda
