// convspe: convolutive stochastic positional encoding (Liutkus et al. 2021, §3 "convSPE"):
// Q̄ = w_q ⋆ z, K̄ = w_k ⋆ z, depthwise correlations of white noise z with learned filters (one
// per head and feature), so E[Q̄_m K̄_n] = Σ_s w_q[s] w_k[s + m − n] is stationary. 1-D over the
// sequence, or 2-D over a rows x cols raster grid (option grid: [rows, cols], k x k filters).
// Options: kernel_size (default 128), shared (default false: queries and keys use one filter set,
// the kernel is then the filter's autocorrelation; the LRA configs' "shared" instead reuse one SPE
// module in every layer, which is the model's choice), grid; besides StochasticPositional's.
//
// The correlation is a zero-padded FFT product: for the valid outputs only z[i .. i + k − 1] is
// read, so noise of L + k − 1 samples suffices (the reference draws L + 4k and crops; the cropped
// codes have the same distribution). The draw is position-major, so a position's noise does not
// depend on L (eval predictions do not depend on the batch's padded length). 2-D is reduced to 1-D:
// with the noise image flattened row-major at row stride P = cols + kw − 1 and the filter padded to
// that stride, output (i, j) of the 1-D correlation at i·P + j is exactly the 2-D one (no row
// wraps, since j + kw − 1 < P). Cost per forward: O(H D R n log n) time and O(H D R n) memory, n ≈
// L + k (1-D) or (rows + k)(cols + k) (2-D).
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/functions.h"
#include "layers/attention/spe_filter.h"

namespace relpos {
namespace {

constexpr const char* kName = "positional convspe";

// The smallest n >= m with no prime factor above 5 (fast for FFTW and cuFFT).
int64_t fft_size(int64_t m) {
  for (int64_t n = m;; ++n) {
    int64_t r = n;
    for (int64_t p : {2, 3, 5})
      while (r % p == 0) r /= p;
    if (r == 1) return n;
  }
}

}  // namespace

SpeCodes conv_spe_codes(const Var& weight_q, const Var& weight_k, const Tensor& noise, int64_t rows,
                        int64_t cols) {
  const int64_t heads = noise.size(0), dim = noise.size(1), realizations = noise.size(2);
  const int64_t kh = weight_q.dim() == 4 ? weight_q.size(2) : 1, kw = weight_q.size(-1);
  const int64_t stride = cols + kw - 1;  // P: the row stride of the flattened noise image
  RELPOS_CHECK(noise.dim() == 4 && noise.size(3) == (rows + kh - 1) * stride, kName,
               "noise must be [H, D, R, (rows + kh - 1)(cols + kw - 1)] = [.., {}], got {}",
               (rows + kh - 1) * stride, noise.str());
  const int64_t n = fft_size(noise.size(3));
  const Var z(rfft(noise, n));  // [H, D, R, F, 2]
  const double scale = spe_scale(realizations, dim);
  auto correlate = [&](const Var& weight) {
    Var w = pad(reshape(weight * scale, {heads * dim, kh, kw}), {0, stride - kw});  // [HD, kh, P]
    w = rfft(reshape(w, {heads, dim, 1, kh * stride}), n);  // [H, D, 1, F, 2]
    // Z·conj(W): the transform of the circular correlation y_u = Σ_v w_v z_(u+v).
    const Var y = irfft(complex_mul(z, w, true), n);
    // Outputs u = i·P + j (views), then one copy into [H, rows, cols, D, R] = [H, L, D, R].
    Var bar = reshape(slice(y, 3, 0, rows * stride), {heads, dim, realizations, rows, stride});
    bar = permute(slice(bar, 4, 0, cols), {0, 3, 4, 1, 2});
    return reshape(contiguous(bar), {heads, rows * cols, dim, realizations});
  };
  const Var qbar = correlate(weight_q);
  return {qbar, weight_k.impl() == weight_q.impl() ? qbar : correlate(weight_k)};
}

namespace {

// A depthwise filter bank as torch's Conv1d/Conv2d(groups = channels, bias = False) holds it, so
// the parameters read conv_q.weight, conv_k.weight as in the reference.
class DepthwiseFilter final : public Module {
 public:
  explicit DepthwiseFilter(Tensor weight) : weight(std::move(weight), true) {
    register_parameter("weight", this->weight);
  }
  Var weight;  // [H·D, 1, k] or [H·D, 1, k, k]
};

class ConvSpe final : public StochasticPositional {
 public:
  explicit ConvSpe(const AttentionOptions& opt)
      : StochasticPositional(opt, kName),
        kernel_(opt.options.get_size("kernel_size", 128)),
        grid_(opt.options.get_list<int64_t>("grid", {})) {
    const bool shared = opt.options.get<bool>("shared", false);
    if (!grid_.empty()) check_grid(kName, grid_);
    // As the reference: U[0, 1) / sqrt(k^ndim / 2).
    Shape shape{heads_ * head_dim_, 1, kernel_};
    if (!grid_.empty()) shape.push_back(kernel_);
    const double bound = 1.0 / std::sqrt(std::pow(kernel_, grid_.empty() ? 1 : 2) / 2.0);
    auto filter = [&] {
      return std::make_shared<DepthwiseFilter>(rand(shape, opt.generator(), 0, bound, opt.dtype));
    };
    conv_q_ = register_module("conv_q", filter());
    conv_k_ = shared ? conv_q_ : register_module("conv_k", filter());
  }

  std::string name() const override { return "convspe"; }

  Tensor draw_noise(int64_t len, Generator& gen, DType dtype, Device device) const override {
    const auto [rows, cols] = grid_shape(len);
    const int64_t kh = grid_.empty() ? 1 : kernel_;
    // Sample u of every (h, d, r) is element u of a position-major draw, whatever its length
    // (Philox element i depends on i only): 1-D codes of position i read samples i .. i + k - 1.
    const int64_t samples = (rows + kh - 1) * (cols + kernel_ - 1);
    const Tensor z = randn({samples, heads_, head_dim_, realizations_}, gen, 0, 1, dtype, device);
    return z.permute({1, 2, 3, 0}).contiguous();  // [H, D, R, samples]
  }

  SpeCodes codes(const Tensor& noise, int64_t len) const override {
    const auto [rows, cols] = grid_shape(len);
    return conv_spe_codes(conv_q_->weight, conv_k_->weight, noise, rows, cols);
  }

 protected:
  void check_lengths(int64_t q_len, int64_t k_len) const override {
    RELPOS_CHECK(grid_.empty() || (q_len == k_len && q_len == grid_[0] * grid_[1]), kName,
                 "on the grid {}x{} queries and keys must be its {} pixels, got {} queries and {} "
                 "keys",
                 grid_.empty() ? 0 : grid_[0], grid_.empty() ? 0 : grid_[1],
                 grid_.empty() ? 0 : grid_[0] * grid_[1], q_len, k_len);
  }

 private:
  std::pair<int64_t, int64_t> grid_shape(int64_t len) const {
    return grid_.empty() ? std::pair<int64_t, int64_t>{1, len}
                         : std::pair<int64_t, int64_t>{grid_[0], grid_[1]};
  }

  int64_t kernel_;
  std::vector<int64_t> grid_;  // empty: 1-D
  std::shared_ptr<DepthwiseFilter> conv_q_, conv_k_;
};

}  // namespace

RELPOS_REGISTER_POSITIONAL("convspe", ConvSpe);

}  // namespace relpos
