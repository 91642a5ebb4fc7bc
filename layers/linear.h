// Linear: y = x W^T + b over the last dim, as torch.nn.Linear (weight [out, in], bias [out],
// initialized as torch does: layers/init.h).
#pragma once

#include "core/generator.h"
#include "layers/init.h"
#include "layers/module.h"

namespace relpos {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = DType::f32,
         Generator& gen = default_generator());

  // x: [..., in] -> [..., out]
  Var forward(const Var& x) const;

  Var& weight() { return weight_; }  // [out, in]
  Var& bias() { return bias_; }      // [out], undefined without bias
  const Var& weight() const { return weight_; }
  const Var& bias() const { return bias_; }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  int64_t in_, out_;
  Var weight_, bias_;
};

}  // namespace relpos
