// The elementwise Adam update (core/ops.h adam_update), written once for the CPU loop
// (core/cpu/adam.cpp) and the CUDA kernel (core/cuda/adam_kernels.cu). Both files compile with
// FMA contraction off (core/CMakeLists.txt: -ffp-contract=off, nvcc --fmad=false; division and
// square root stay IEEE), so each operation rounds once to T and the result has the bits of the
// same formula computed one op at a time (the composed form kept in tests/core/test_adam_update).
#pragma once

#include <cmath>

#include "core/host_device.h"

namespace relpos {

// The scalars of one parameter's update, each rounded once to T on the host.
template <typename T>
struct AdamScalars {
  T decay = 1;  // p·decay before the step (decoupled weight decay): 1 − lr·wd
  T l2 = 0;     // g + p·l2 (L2 weight decay): wd
  T beta1 = 0, one_minus_beta1 = 1, beta2 = 0, one_minus_beta2 = 1;
  T inv_sqrt_bias2 = 1;  // 1/√(1 − β2^t)
  T eps = 0;
  T step_size = 0;  // lr / (1 − β1^t)
  bool apply_decay = false, apply_l2 = false;
};

// The scalars for update t of a parameter, as the composed form rounds them (host only).
template <typename T>
AdamScalars<T> adam_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                            bool decoupled, double t) {
  AdamScalars<T> s;
  s.apply_decay = decoupled && weight_decay != 0;
  s.apply_l2 = !decoupled && weight_decay != 0;
  s.decay = static_cast<T>(1 - lr * weight_decay);
  s.l2 = static_cast<T>(weight_decay);
  s.beta1 = static_cast<T>(beta1);
  s.one_minus_beta1 = static_cast<T>(1 - beta1);
  s.beta2 = static_cast<T>(beta2);
  s.one_minus_beta2 = static_cast<T>(1 - beta2);
  s.inv_sqrt_bias2 = static_cast<T>(1 / std::sqrt(1 - std::pow(beta2, t)));
  s.eps = static_cast<T>(eps);
  s.step_size = static_cast<T>(lr / (1 - std::pow(beta1, t)));
  return s;
}

// One element: (p, g, m, v) -> (p', m', v') in the order of core/ops.h adam_update.
template <typename T>
RELPOS_HOST_DEVICE void adam_element(const AdamScalars<T>& s, T p, T g, T m, T v, T& p_out,
                                     T& m_out, T& v_out) {
  if (s.apply_l2) g = g + p * s.l2;
  if (s.apply_decay) p = p * s.decay;
  m = m * s.beta1 + g * s.one_minus_beta1;
  v = v * s.beta2 + (g * g) * s.one_minus_beta2;
  const T denom = std::sqrt(v) * s.inv_sqrt_bias2 + s.eps;
  p_out = p - (m / denom) * s.step_size;
  m_out = m;
  v_out = v;
}

}  // namespace relpos
