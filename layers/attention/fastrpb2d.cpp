// fastrpb2d: FastRPB on a rows x cols raster grid (seed 002 §3.2.2, App. B.3 eq. 36, 42):
// W2d[(r,c),(r',c')] = t(r - r') + t(c - c'), one weight vector per head for both axes, so
// W2d·V = T·rowsum (broadcast over c) + T·colsum (broadcast over r), two 1-D FFT products.
// Weight and init as fastrpb with N = max(rows, cols); not causal (refused).
#include <algorithm>
#include <vector>

#include "layers/attention/positional.h"
#include "layers/attention/toeplitz.h"

namespace relpos {
namespace {

constexpr const char* kName = "positional fastrpb2d";

class FastRpb2d final : public Positional {
 public:
  explicit FastRpb2d(const AttentionOptions& opt)
      : options_(read_toeplitz_bias_options(opt, kName)) {
    const std::vector<int64_t> grid =
        opt.options.get_list_inherited<int64_t>("grid", square_grid(opt));
    check_grid(kName, grid,
               " (the default, a square of the layer's content tokens, needs a square number of "
               "them)");
    rows_ = grid[0];
    cols_ = grid[1];
    weight_ = Var(init_toeplitz_weights(options_.symmetric, opt.num_heads, std::max(rows_, cols_),
                                        opt.dtype, opt.generator()),
                  true);
    register_parameter("weight", weight_);
  }

  std::string name() const override { return "fastrpb2d"; }

  // The default grid: a square of the layer's content tokens (max_len without the special
  // tokens) when they make one; {} otherwise, so `grid` must be given.
  std::vector<int64_t> square_grid(const AttentionOptions& opt) const {
    const int64_t content = opt.max_len - options_.front - options_.back;
    int64_t side = 0;
    while ((side + 1) * (side + 1) <= content) ++side;
    if (content <= 0 || side * side != content) return {};
    return {side, side};
  }
  // Special rows get no term: with a leading special token (CLS) its row is never changed.
  bool reaches_leading_special_rows() const override { return options_.front == 0; }
  bool reads_whole_images() const override { return true; }
  bool relates_one_sequence() const override { return true; }
  std::string why_no_memory() const override {
    return "its grid holds one image, with no memory before it";
  }

  Var output_term(const Var& v, int64_t q_len, const AttentionInputs& in) override {
    const int64_t batch = v.size(0), heads = v.size(1), len = v.size(2), dim = v.size(3);
    RELPOS_CHECK(q_len == len, kName,
                 "needs as many queries as keys (W relates pixels of one image), got {} queries "
                 "and {} keys",
                 q_len, len);
    RELPOS_CHECK(!in.causal, kName,
                 "cannot be causal: its weights model distances in both directions on the grid, "
                 "not an order of pixels");
    RELPOS_CHECK(heads == weight_.size(0), kName, "has weights for {} heads, values have {}",
                 weight_.size(0), heads);
    RELPOS_CHECK(len == rows_ * cols_ + options_.front + options_.back, kName,
                 "a sequence of {} tokens does not fit the grid {}x{} = {} plus {} + {} special "
                 "tokens",
                 len, rows_, cols_, rows_ * cols_, options_.front, options_.back);
    Var content = toeplitz_content_values(v, in, options_, kName);    // [B, H, rows·cols, D]
    Var image = reshape(content, {batch, heads, rows_, cols_, dim});  // [B, H, rows, cols, D]
    Var by_row = toeplitz_matvec(central_toeplitz_weights(weight_, options_.symmetric, rows_),
                                 sum(image, {3}), false);  // [B, H, rows, D]: t(r - r')·rowsum(r')
    Var by_col = toeplitz_matvec(central_toeplitz_weights(weight_, options_.symmetric, cols_),
                                 sum(image, {2}), false);  // [B, H, cols, D]: t(c - c')·colsum(c')
    Var y = unsqueeze(by_row, 3) + unsqueeze(by_col, 2);   // [B, H, rows, cols, D]
    y = reshape(y, {batch, heads, rows_ * cols_, dim});    // [B, H, rows·cols, D]
    return pad(y, {0, 0, options_.front, options_.back});  // [B, H, L, D]
  }

 private:
  ToeplitzBiasOptions options_;
  int64_t rows_, cols_;
  Var weight_;  // [H, 2 max(rows, cols) - 1] (full) or [H, max(rows, cols)] (symmetric)
};

}  // namespace

RELPOS_REGISTER_POSITIONAL("fastrpb2d", FastRpb2d);

}  // namespace relpos
