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
  check_input("LearnedPositionalEmbedding", x, max_len_, dim_);
  // weight[:L]: [L, dim], broadcast over B.
  return x + slice(weight_, 0, 0, x.size(1));
}

SinusoidalPositionalEmbedding::SinusoidalPositionalEmbedding(int64_t max_len, int64_t dim,
                                                             DType dtype)
    : max_len_(max_len), dim_(dim) {
  RELPOS_CHECK(max_len_ > 0 && dim_ > 0, "SinusoidalPositionalEmbedding",
               "sizes must be positive, got max_len {} dim {}", max_len_, dim_);
  // pe: [max_len, dim], computed in double; column 2i and 2i+1 share the frequency of 2i.
  std::vector<double> pe(static_cast<size_t>(max_len_ * dim_));
  for (int64_t pos = 0; pos < max_len_; ++pos)
    for (int64_t j = 0; j < dim_; ++j) {
      const double angle =
          static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(j - j % 2) / dim_);
      pe[pos * dim_ + j] = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  pe_ = Tensor::from_vector(pe, {max_len_, dim_}).to(dtype);
  register_buffer("pe", pe_);
}

Var SinusoidalPositionalEmbedding::forward(const Var& x) const {
  check_input("SinusoidalPositionalEmbedding", x, max_len_, dim_);
  return x + Var(pe_.slice(0, 0, x.size(1)));
}

}  // namespace relpos
