// Absolute positional embeddings added to the token embeddings: learned (a table [max_len, dim]
// initialized N(0, 1) like torch.nn.Embedding), learned over an image grid (a row and a column
// vector per pixel, summed) and sinusoidal (Vaswani et al. 2017, §3.5:
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

// The sequence [front specials, the rows x cols pixels row-major, back specials]: pixel (r, c)
// gets row[r] + col[c] (an image prior: the pixels of one row share row[r], of one column
// col[c]; (rows + cols) x dim parameters instead of rows x cols x dim), a special its own vector.
// Each table is initialized N(0, 1).
class LearnedGridPositionalEmbedding : public Module {
 public:
  LearnedGridPositionalEmbedding(int64_t front, int64_t rows, int64_t cols, int64_t back,
                                 int64_t dim, DType dtype = DType::f32,
                                 Generator& gen = default_generator());

  // x: [B, L, dim] -> x + table()[:L], L <= front + rows * cols + back
  Var forward(const Var& x) const;

  // [front + rows * cols + back, dim]: each position's vector.
  Var table() const;
  // The parameters: special [front + back, dim] (undefined when there are none), row [rows, dim],
  // col [cols, dim].
  Var& special() { return special_; }
  Var& row() { return row_; }
  Var& col() { return col_; }

 private:
  int64_t front_, rows_, cols_, back_, dim_;
  Var special_, row_, col_;
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
