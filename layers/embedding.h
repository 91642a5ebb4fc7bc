// Embedding: a lookup table weight [num, dim] indexed by token ids, as torch.nn.Embedding
// (initialized N(0, 1)).
#pragma once

#include "layers/init.h"
#include "layers/module.h"

namespace relpos {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, DType dtype = DType::f32,
            Generator& gen = default_generator());

  // ids: any shape, i32/i64 in [0, num) -> [*ids.shape, dim]
  Var forward(const Tensor& ids) const;

  Var& weight() { return weight_; }  // [num, dim]
  const Var& weight() const { return weight_; }
  int64_t num_embeddings() const { return num_; }
  int64_t dim() const { return dim_; }

 private:
  int64_t num_, dim_;
  Var weight_;
};

}  // namespace relpos
