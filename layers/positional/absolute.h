// Absolute positional embeddings added to the token embeddings: learned (a table [max_len, dim]
// initialized N(0, 1) like torch.nn.Embedding) and sinusoidal (Vaswani et al. 2017, §3.5:
// PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))), a fixed buffer.
#pragma once

#include "layers/init.h"
#include "layers/module.h"

namespace relpos {

class LearnedPositionalEmbedding : public Module {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t dim, DType dtype = DType::f32,
                             Generator& gen = default_generator());

  // x: [B, L, dim] -> x + weight[:L], L <= max_len
  Var forward(const Var& x) const;

  Var& weight() { return weight_; }  // [max_len, dim]
  const Var& weight() const { return weight_; }

 private:
  int64_t max_len_, dim_;
  Var weight_;
};

class SinusoidalPositionalEmbedding : public Module {
 public:
  SinusoidalPositionalEmbedding(int64_t max_len, int64_t dim, DType dtype = DType::f32);

  // x: [B, L, dim] -> x + pe[:L], L <= max_len
  Var forward(const Var& x) const;

  const Tensor& table() const { return pe_; }  // [max_len, dim], not trained

 private:
  int64_t max_len_, dim_;
  Tensor pe_;
};

}  // namespace relpos
