// fastrpb: FastRPB, 1-D (seed 002 eq. 10-12, App. B.2): adds W·V to the attention output, per head
// W[i, j] = w_(i-j) Toeplitz (w_(i-j) = 0 for j > i when causal), by zero-padded FFT; causal
// queries after a memory take the last Lq rows of the product over memory + segment. Weight
// [H, 2N-1] (full) or [H, N] (symmetric), N = max_len - special tokens; init as the reference
// code: w_d = |d|·1e-5·u_h + 1e-6·z_h, u_h ~ U[0, 1), z_h ~ N(0, 1) one scalar each per head.
#include "core/shape.h"
#include "layers/attention/positional.h"
#include "layers/attention/toeplitz.h"

namespace relpos {
namespace {

constexpr const char* kName = "positional fastrpb";

class FastRpb final : public Positional {
 public:
  explicit FastRpb(const AttentionOptions& opt) : options_(read_toeplitz_bias_options(opt, kName)) {
    const int64_t max_len = opt.options.get_inherited<int64_t>("max_len", opt.max_len);
    RELPOS_CHECK(max_len > 0, kName,
                 "needs max_len > 0, from its option max_len or the layer's max_len; got {}",
                 max_len);
    check_largest_size(kName, "max_len", max_len);
    max_content_ = max_len - options_.front - options_.back;
    RELPOS_CHECK(max_content_ > 0, kName,
                 "max_len {} leaves no content token besides {} + {} special tokens", max_len,
                 options_.front, options_.back);
    weight_ = Var(init_toeplitz_weights(options_.symmetric, opt.num_heads, max_content_, opt.dtype,
                                        opt.generator()),
                  true);
    register_parameter("weight", weight_);
  }

  std::string name() const override { return "fastrpb"; }
  // Special rows get no term: with a leading special token (CLS) its row is never changed.
  bool reaches_leading_special_rows() const override { return options_.front == 0; }
  int64_t max_keys() const override { return max_content_ + options_.front + options_.back; }
  bool relates_one_sequence() const override { return true; }
  std::string why_no_memory() const override {
    if (options_.front == 0 && options_.back == 0) return {};
    return fmt::format(
        "queries after a memory need special_tokens_front and special_tokens_back 0, got {} and "
        "{}",
        options_.front, options_.back);
  }

  Var output_term(const Var& v, int64_t q_len, const AttentionInputs& in) override {
    const int64_t len = v.size(2);
    // Causal queries may be the last Lq of the keys (a memory before them): W relates positions
    // of one sequence either way, and rows 0 .. Lk - Lq - 1 are the memory's own.
    const bool after_memory = in.causal && q_len < len;
    RELPOS_CHECK(q_len == len || after_memory, kName,
                 "needs as many queries as keys, or causal queries after a memory (W relates "
                 "positions of one sequence), got {} queries and {} keys (causal {})",
                 q_len, len, in.causal);
    RELPOS_CHECK(!after_memory || why_no_memory().empty(), kName, "{} ({} of {} keys)",
                 why_no_memory(), q_len, len);
    RELPOS_CHECK(v.size(1) == weight_.size(0), kName, "has weights for {} heads, values have {}",
                 weight_.size(0), v.size(1));
    // With padding, a sequence's trailing specials ([SEP]) sit before the padding, inside the
    // slice toeplitz_content_values takes: zero them as keys here and as rows below.
    const Tensor rows = trailing_special_rows(in, len, v.dtype(), v.device());  // [B, 1, L, 1]
    Var content = toeplitz_content_values(rows.defined() ? v * Var(rows) : v, in, options_, kName);
    const int64_t content_len = content.size(2);
    RELPOS_CHECK(content_len <= max_content_, kName,
                 "{} content tokens exceed the {} its weights cover (max_len {})", content_len,
                 max_content_, max_content_ + options_.front + options_.back);
    Var w = central_toeplitz_weights(weight_, options_.symmetric, content_len);  // [H, 2Lc - 1]
    Var y = toeplitz_matvec(w, content, in.causal);                              // [B, H, Lc, D]
    y = pad(y, {0, 0, options_.front, options_.back});                           // [B, H, L, D]
    if (rows.defined()) y = y * Var(rows);
    return after_memory ? slice(y, 2, len - q_len, len) : y;  // [B, H, Lq, D]
  }

 private:
  // [B, 1, L, 1]: 0 on the last options_.back real tokens of each sequence, 1 elsewhere;
  // undefined without trailing specials or without a mask (they are then rows L - back ..).
  Tensor trailing_special_rows(const AttentionInputs& in, int64_t len, DType dtype,
                               Device device) const {
    if (options_.back == 0 || !in.key_mask.defined()) return {};
    const Tensor mask = in.key_mask.to(Device::cpu()).contiguous();  // [B, L] u8
    const int64_t batch = mask.size(0);
    std::vector<double> rows(batch * len, 1.0);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = len - 1, left = options_.back; j >= 0 && left > 0; --j)
        if (mask.data<uint8_t>()[b * len + j] != 0) {
          rows[b * len + j] = 0.0;
          --left;
        }
    return Tensor::from_vector(rows, {batch, 1, len, 1}).to(dtype).to(device);
  }

  ToeplitzBiasOptions options_;
  int64_t max_content_;  // N: the longest content the weights cover
  Var weight_;           // [H, 2N - 1] (full) or [H, N] (symmetric)
};

}  // namespace

RELPOS_REGISTER_POSITIONAL("fastrpb", FastRpb);

}  // namespace relpos
