// CUDA adam_update (core/ops.h): the scalars rounded on the host as the CPU rounds them, then one
// kernel (adam_kernels.cu).
#include "core/backend.h"
#include "core/cuda/adam_kernels.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/ops.h"

namespace relpos::cuda {

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const AdamCoefficients& c, const AdamUpdate& out) {
  DeviceGuard guard(param.device());
  dispatch_floating(param.dtype(), "adam_update", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RELPOS_CUDA_CHECK(
        "adam_update",
        launch_adam_update(
            adam_scalars<T>(c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.decoupled, c.step),
            param.data<T>(), grad.data<T>(), exp_avg.data<T>(), exp_avg_sq.data<T>(),
            out.param.data<T>(), out.exp_avg.data<T>(), out.exp_avg_sq.data<T>(), param.numel(),
            stream_of(param.device())));
  });
}

}  // namespace relpos::cuda
