// Entry points: dropout_mask (a u8 keep mask from the Philox stream of a generator) and
// apply_dropout_mask (x * mask / (1 - p) in one pass that reads the u8 mask: dropout_apply).
#include "core/backend.h"
#include "core/ops.h"
#include "core/ops/validate.h"
#include "core/philox.h"

namespace relpos {

namespace {
void check_p(const char* op, double p) {
  RELPOS_CHECK(p >= 0 && p < 1, op, "p must be in [0, 1), got {}", p);
}
}  // namespace

Tensor dropout_mask(const Shape& shape, double p, Generator& gen, Device device) {
  check_p("dropout_mask", p);
  // Nothing is dropped: like torch, p == 0 draws no random numbers (gen is not advanced).
  if (p == 0) return ones(shape, DType::u8, device);
  Tensor mask = Tensor::empty(shape, DType::u8, device);
  const uint64_t offset = gen.reserve(philox::blocks_for_uniform(mask.numel()));
  if (device.is_cpu())
    cpu::dropout_mask(mask, p, gen.seed(), offset);
  else
    cuda::dropout_mask(mask, p, gen.seed(), offset);
  return mask;
}

namespace {

// out = x * (mask * 1/(1-p)) in one pass over x and the u8 mask, no temporary: the bits of
// mul(x, mul_scalar(cast(mask), 1/(1-p))). x * 0 keeps NaN/inf -> NaN, as torch does. out may be
// x itself (each element is read before it is written). bf16 x: computed in f32, rounded once.
void dropout_into(const char* op, const Tensor& x, const Tensor& mask, double p,
                  const Tensor& out) {
  check_p(op, p);
  check_defined(op, x);
  RELPOS_CHECK(is_floating_or_bf16(x.dtype()), op,
               "expects a floating dtype (f32, f64 or bf16), got {}", x.str());
  check_defined(op, mask, "mask");
  check_same_device(op, {&x, &mask});
  RELPOS_CHECK(mask.dtype() == DType::u8, op, "mask must be u8, got {}", mask.str());
  RELPOS_CHECK(broadcast_shapes(mask.shape(), x.shape(), op) == x.shape(), op,
               "mask {} does not broadcast to input {}", mask.str(), x.str());
  const Tensor keep = mask.expand(x.shape());
  if (x.device().is_cpu())
    cpu::dropout_apply(x, keep, 1.0 / (1.0 - p), out);
  else
    cuda::dropout_apply(x, keep, 1.0 / (1.0 - p), out);
}

}  // namespace

Tensor apply_dropout_mask(const Tensor& x, const Tensor& mask, double p) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  dropout_into("apply_dropout_mask", x, mask, p, out);
  return out;
}

void apply_dropout_mask_(const Tensor& x, const Tensor& mask, double p) {
  RELPOS_CHECK(x.is_contiguous(), "apply_dropout_mask_", "x must be contiguous, got {}", x.str());
  dropout_into("apply_dropout_mask_", x, mask, p, x);
}

}  // namespace relpos
