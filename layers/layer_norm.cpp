// LayerNorm layer (layers/layer_norm.h); the fused op is autograd's layer_norm.
#include "layers/layer_norm.h"

#include "autograd/functions.h"

namespace relpos {

LayerNorm::LayerNorm(int64_t dim, double eps, bool affine, DType dtype) : dim_(dim), eps_(eps) {
  RELPOS_CHECK(dim_ > 0, "LayerNorm", "dim must be positive, got {}", dim_);
  RELPOS_CHECK(eps_ >= 0, "LayerNorm", "eps must be non-negative, got {}", eps_);
  if (affine) {
    weight_ = Var(ones({dim_}, dtype), true);
    bias_ = Var(zeros({dim_}, dtype), true);
    register_parameter("weight", weight_);
    register_parameter("bias", bias_);
  }
}

Var LayerNorm::forward(const Var& x) const {
  const auto scope = profile_scope();
  RELPOS_CHECK(x.dim() >= 1 && x.size(-1) == dim_, "LayerNorm",
               "input's last dim must be {}, got {}", dim_, x.value().str());
  return layer_norm(x, weight_, bias_, eps_);
}

}  // namespace relpos
