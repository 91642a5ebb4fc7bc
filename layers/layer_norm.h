// LayerNorm over the last dim, as torch.nn.LayerNorm(dim, eps, elementwise_affine):
// y = (x - mean) / sqrt(var + eps) * weight + bias, biased variance; weight 1, bias 0 at init.
#pragma once

#include "layers/module.h"

namespace relpos {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool affine = true, DType dtype = DType::f32);

  // x: [..., dim] -> [..., dim]
  Var forward(const Var& x) const;

  Var& weight() { return weight_; }  // [dim], undefined without affine
  Var& bias() { return bias_; }      // [dim], undefined without affine
  const Var& weight() const { return weight_; }
  const Var& bias() const { return bias_; }

 private:
  int64_t dim_;
  double eps_;
  Var weight_, bias_;
};

}  // namespace relpos
