// CUDA backend: copy, fill, arange, unary, binary, compare, where and random sampling: builds
// the strided arguments and launches elementwise_kernels.cu on the device's stream.
#include "core/backend.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/elementwise_kernels.h"
#include "core/cuda/strided_args.h"

namespace relpos::cuda {

void copy(const Tensor& src, const Tensor& dst) {
  DeviceGuard guard(dst.device());
  const StridedArgs<2> args = strided_args<2>("copy_", {&dst, &src});
  if (args.dense && src.dtype() == dst.dtype()) {  // a plain device-to-device copy
    RELPOS_CUDA_CHECK("copy_",
                      cudaMemcpyAsync(args.data[0], args.data[1], args.n * dtype_size(dst.dtype()),
                                      cudaMemcpyDeviceToDevice, stream_of(dst.device())));
    return;
  }
  RELPOS_CUDA_CHECK("copy_", launch_copy(dst.dtype(), src.dtype(), args, stream_of(dst.device())));
}

void fill(const Tensor& dst, double value) {
  DeviceGuard guard(dst.device());
  RELPOS_CUDA_CHECK("fill_", launch_fill(dst.dtype(), value, strided_args<1>("fill_", {&dst}),
                                         stream_of(dst.device())));
}

void arange(const Tensor& out, double start, double step) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("arange", launch_arange(out.dtype(), out.raw_data(), out.numel(), start, step,
                                            stream_of(out.device())));
}

void unary(UnaryOp op, double scalar, const Tensor& x, const Tensor& out) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("unary",
                    launch_unary(op, out.dtype(), scalar, strided_args<2>("unary", {&out, &x}),
                                 stream_of(out.device())));
}

void binary(BinaryOp op, double scalar, const Tensor& a, const Tensor& b, const Tensor& out) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK(
      "binary", launch_binary(op, out.dtype(), scalar, strided_args<3>("binary", {&out, &a, &b}),
                              stream_of(out.device())));
}

void compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("compare",
                    launch_compare(op, a.dtype(), strided_args<3>("compare", {&out, &a, &b}),
                                   stream_of(out.device())));
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("where",
                    launch_where(out.dtype(), strided_args<4>("where", {&out, &cond, &a, &b}),
                                 stream_of(out.device())));
}

void random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("rand", launch_random_uniform(out.dtype(), out.raw_data(), out.numel(), seed,
                                                  offset, low, high, stream_of(out.device())));
}

void random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double std) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("randn", launch_random_normal(out.dtype(), out.raw_data(), out.numel(), seed,
                                                  offset, mean, std, stream_of(out.device())));
}

void dropout_mask(const Tensor& out, double p, uint64_t seed, uint64_t offset) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("dropout", launch_dropout_mask(out.data<uint8_t>(), out.numel(), p, seed,
                                                   offset, stream_of(out.device())));
}

void dropout_apply(const Tensor& x, const Tensor& mask, double scale, const Tensor& out) {
  DeviceGuard guard(out.device());
  RELPOS_CUDA_CHECK("dropout", launch_dropout_apply(out.dtype(), scale,
                                                    strided_args<3>("dropout", {&out, &x, &mask}),
                                                    stream_of(out.device())));
}

}  // namespace relpos::cuda
