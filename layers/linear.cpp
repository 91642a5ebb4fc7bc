// Linear layer (layers/linear.h).
#include "layers/linear.h"

#include "autograd/functions.h"

namespace relpos {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, DType dtype, Generator& gen)
    : in_(in_features), out_(out_features) {
  RELPOS_CHECK(in_ > 0 && out_ > 0, "Linear", "sizes must be positive, got in {} out {}", in_,
               out_);
  Tensor w = Tensor::empty({out_, in_}, dtype);
  linear_weight_(w, gen);
  weight_ = Var(w, true);
  register_parameter("weight", weight_);
  if (bias) {
    Tensor b = Tensor::empty({out_}, dtype);
    linear_bias_(b, in_, gen);
    bias_ = Var(b, true);
    register_parameter("bias", bias_);
  }
}

Var Linear::forward(const Var& x) const {
  const auto scope = profile_scope();
  RELPOS_CHECK(x.dim() >= 1 && x.size(-1) == in_, "Linear",
               "input's last dim must be in_features = {}, got {}", in_, x.value().str());
  // One GEMM over all leading dims: [N, in] x [out, in]^T -> [N, out].
  Shape out_shape = x.shape();
  out_shape.back() = out_;
  Var y = matmul(reshape(x, {x.numel() / in_, in_}), weight_, false, true);
  if (bias_.defined()) y = y + bias_;
  return reshape(y, out_shape);
}

}  // namespace relpos
