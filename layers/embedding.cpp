// Embedding layer (layers/embedding.h).
#include "layers/embedding.h"

#include "autograd/functions.h"

namespace relpos {

Embedding::Embedding(int64_t num_embeddings, int64_t dim, DType dtype, Generator& gen)
    : num_(num_embeddings), dim_(dim) {
  RELPOS_CHECK(num_ > 0 && dim_ > 0, "Embedding", "sizes must be positive, got num {} dim {}", num_,
               dim_);
  Tensor w = Tensor::empty({num_, dim_}, dtype);
  normal_(w, 0.0, 1.0, gen);
  weight_ = Var(w, true);
  register_parameter("weight", weight_);
}

Var Embedding::forward(const Tensor& ids) const {
  const auto scope = profile_scope();
  return embedding(weight_, ids);
}

}  // namespace relpos
