// Learned and sinusoidal absolute positional embeddings (layers/positional/absolute.h).
#include "layers/positional/absolute.h"

#include <cmath>
#include <vector>

#include "autograd/functions.h"

namespace relpos {
namespace {

// x must be [B, L, dim] with L <= max_len.
void check_input(const char* who, const Var& x, int64_t max_len, int64_t dim) {
  RELPOS_CHECK(x.dim() == 3 && x.size(2) == dim, who, "expects x [B, L, {}], got {}", dim,
               x.value().str());
  RELPOS_CHECK(x.size(1) <= max_len, who, "sequence length {} exceeds max_len {}", x.size(1),
               max_len);
}

}  // namespace

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t dim, DType dtype,
                                                       Generator& gen)
    : max_len_(max_len), dim_(dim) {
  RELPOS_CHECK(max_len_ > 0 && dim_ > 0, "LearnedPositionalEmbedding",
               "sizes must be positive, got max_len {} dim {}", max_len_, dim_);
  Tensor w = Tensor::empty({max_len_, dim_}, dtype);
  normal_(w, 0.0, 1.0, gen);
  weight_ = Var(w, true);
  register_parameter("weight", weight_);
}

Var LearnedPositionalEmbedding::forward(const Var& x) const {
  const auto scope = profile_scope();
  check_input("LearnedPositionalEmbedding", x, max_len_, dim_);
  // weight[:L]: [L, dim], broadcast over B.
  return x + slice(weight_, 0, 0, x.size(1));
}

LearnedGridPositionalEmbedding::LearnedGridPositionalEmbedding(int64_t front, int64_t rows,
                                                               int64_t cols, int64_t back,
                                                               int64_t dim, DType dtype,
                                                               Generator& gen)
    : front_(front), rows_(rows), cols_(cols), back_(back), dim_(dim) {
  RELPOS_CHECK(rows_ > 0 && cols_ > 0 && dim_ > 0 && front_ >= 0 && back_ >= 0,
               "LearnedGridPositionalEmbedding",
               "sizes must be positive, got rows {} cols {} dim {} (specials {} + {})", rows_,
               cols_, dim_, front_, back_);
  // Registered as members: Module keeps their addresses (to() moves them in place).
  const auto learned = [&](const char* name, int64_t n, Var& param) {
    Tensor w = Tensor::empty({n, dim_}, dtype);
    normal_(w, 0.0, 1.0, gen);
    param = Var(w, true);
    register_parameter(name, param);
  };
  if (front_ + back_ > 0) learned("special", front_ + back_, special_);
  learned("row", rows_, row_);
  learned("col", cols_, col_);
}

Var LearnedGridPositionalEmbedding::table() const {
  // [rows, 1, dim] + [1, cols, dim] -> [rows * cols, dim], row-major like the image.
  const Var grid = reshape(reshape(row_, {rows_, 1, dim_}) + reshape(col_, {1, cols_, dim_}),
                           {rows_ * cols_, dim_});
  std::vector<Var> parts;
  if (front_ > 0) parts.push_back(slice(special_, 0, 0, front_));
  parts.push_back(grid);
  if (back_ > 0) parts.push_back(slice(special_, 0, front_, front_ + back_));
  return parts.size() == 1 ? grid : cat(parts, 0);
}

Var LearnedGridPositionalEmbedding::forward(const Var& x) const {
  const auto scope = profile_scope();
  check_input("LearnedGridPositionalEmbedding", x, front_ + rows_ * cols_ + back_, dim_);
  return x + slice(table(), 0, 0, x.size(1));
}

SinusoidalPositionalEmbedding::SinusoidalPositionalEmbedding(int64_t max_len, int64_t dim,
                                                             DType dtype)
    : max_len_(max_len), dim_(dim) {
  RELPOS_CHECK(max_len_ > 0 && dim_ > 0, "SinusoidalPositionalEmbedding",
               "sizes must be positive, got max_len {} dim {}", max_len_, dim_);
  // pe: [max_len, dim], computed in double; column 2i and 2i+1 share the frequency of 2i. A
  // tensor from the start, so a max_len too large for memory is refused by the allocator.
  const Tensor pe = Tensor::empty({max_len_, dim_}, DType::f64);
  double* row = pe.data<double>();
  for (int64_t pos = 0; pos < max_len_; ++pos, row += dim_)
    for (int64_t j = 0; j < dim_; ++j) {
      const double angle =
          static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(j - j % 2) / dim_);
      row[j] = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  pe_ = pe.to(dtype);
  register_buffer("pe", pe_);
}

Var SinusoidalPositionalEmbedding::forward(const Var& x) const {
  const auto scope = profile_scope();
  check_input("SinusoidalPositionalEmbedding", x, max_len_, dim_);
  return x + Var(pe_.slice(0, 0, x.size(1)));
}

}  // namespace relpos
