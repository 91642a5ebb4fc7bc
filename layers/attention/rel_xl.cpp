// rel_xl: Transformer-XL relative attention (Dai et al. 2019, §3.3; seed 000 App. B),
//   scores[i, j] = (q_i + u)·k_j + (q_i + v)·r_{(M+i)-j}      terms (a)+(c), (b)+(d)
//   Y = softmax((scores + S) / sqrt(D)) V,  r_d = r_net(sinusoid(min(d, clamp_len))),
// with (b)+(d) inside the fused attention op's tiles (core/ops.h AttentionSpec::rel_query), or
// from one product (q + v)·rᵀ over the distances Lk-1 … 0 and a rel-shift. u, v
// ("r_w_bias", "r_r_bias") belong to this layer; TXL shares them across layers (a model can tie
// them). Init: u, v and r_net.weight normal(0, 0.02), as TXL. Causal only. The model may drop the
// sinusoids as TXL does (DistanceDropout: one mask per pass for all layers).
#include "layers/attention/rel_xl.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/functions.h"
#include "layers/attention/masks.h"
#include "layers/attention/positional.h"
#include "layers/init.h"

namespace relpos {

namespace {
constexpr const char* kWho = "attention rel_xl";
}  // namespace

Var rel_shift(const Var& x) {
  const int n = x.dim();
  const int64_t q_len = x.size(-2), k_len = x.size(-1);
  Shape tall = x.shape();  // [..., Lk + 1, Lq]
  tall[n - 2] = k_len + 1;
  tall[n - 1] = q_len;
  Var padded = pad(x, {1, 0});                                   // [..., Lq, Lk + 1]
  Var rows = slice(reshape(padded, tall), n - 2, 1, k_len + 1);  // [..., Lk, Lq]
  return reshape(rows, x.shape());                               // [..., Lq, Lk]
}

RelXlAttention::RelXlAttention(const AttentionOptions& opt)
    : heads_(opt.num_heads),
      head_dim_(opt.head_dim),
      model_dim_(opt.model_dim),
      clamp_len_(opt.options.get_size("clamp_len", 0, 0)),
      dropout_(opt.options.get_inherited<double>("dropout", opt.dropout)),
      fused_(opt.options.get<bool>("fused", true)),
      gen_(fork_generator(opt.generator())) {
  RELPOS_CHECK(dropout_ >= 0 && dropout_ < 1, kWho, "dropout must be in [0, 1), got {}", dropout_);
  register_generator("generator", gen_);
  RELPOS_CHECK(heads_ > 0 && head_dim_ > 0, kWho, "needs num_heads and head_dim > 0, got {} and {}",
               heads_, head_dim_);
  RELPOS_CHECK(model_dim_ > 0 && model_dim_ % 2 == 0, kWho,
               "model_dim (the width of the sinusoidal distance embedding) must be positive and "
               "even, got {}",
               model_dim_);
  Generator& gen = opt.generator();
  r_w_bias_ = Var(Tensor::empty({heads_, head_dim_}, opt.dtype), true);
  r_r_bias_ = Var(Tensor::empty({heads_, head_dim_}, opt.dtype), true);
  normal_(r_w_bias_.value(), 0.0, 0.02, gen);
  normal_(r_r_bias_.value(), 0.0, 0.02, gen);
  register_parameter("r_w_bias", r_w_bias_);
  register_parameter("r_r_bias", r_r_bias_);
  r_net_ = register_module(
      "r_net", std::make_shared<Linear>(model_dim_, heads_ * head_dim_, false, opt.dtype, gen));
  normal_(r_net_->weight().value(), 0.0, 0.02, gen);
}

DistanceDropout::DistanceDropout(double p, Generator& parent)
    : p_(p), gen_(fork_generator(parent)) {
  RELPOS_CHECK(p_ >= 0 && p_ < 1, kWho,
               "the distance embedding's dropout must be in [0, 1), got {}", p_);
  register_generator("generator", gen_);
}

Tensor DistanceDropout::apply(const Tensor& sinusoids, bool new_pass) {
  if (!is_training() || p_ == 0) return sinusoids;
  if (new_pass || !mask_.defined() || mask_.shape() != sinusoids.shape() ||
      mask_.device() != sinusoids.device())
    mask_ = dropout_mask(sinusoids.shape(), p_, gen_, sinusoids.device());
  return apply_dropout_mask(sinusoids, mask_, p_);
}

void RelXlAttention::share_distance_dropout(std::shared_ptr<DistanceDropout> dropout,
                                            bool first_layer) {
  distance_dropout_ = std::move(dropout);
  draws_distance_mask_ = first_layer;
}

void RelXlAttention::set_clamp_len(int64_t clamp_len) {
  RELPOS_CHECK(clamp_len >= 0, kWho, "clamp_len must be >= 0 (0: no clamp), got {}", clamp_len);
  // The trainer sets its context before every update: an unchanged clamp keeps the cached table
  // (rebuilding it on the host cost 13 ms per layer per update at Lk 1,024, width 512).
  if (clamp_len == clamp_len_) return;
  clamp_len_ = clamp_len;
  sinusoids_ = Tensor();  // the cached table was clamped at the old value
}

const Tensor& RelXlAttention::relative_sinusoids(int64_t k_len, DType dtype, Device device) {
  if (sinusoids_.defined() && sinusoids_.size(0) == k_len && sinusoids_.dtype() == dtype &&
      sinusoids_.device() == device)
    return sinusoids_;
  // TXL's PositionalEmbedding: [sin(d·f_c) | cos(d·f_c)], f_c = 10000^(-2c / model_dim), c < half.
  const int64_t half = model_dim_ / 2;
  std::vector<double> frequency(static_cast<size_t>(half));
  for (int64_t c = 0; c < half; ++c)
    frequency[c] = std::pow(10000.0, -2.0 * static_cast<double>(c) / model_dim_);
  const Tensor table = Tensor::empty({k_len, model_dim_}, DType::f64);  // [Lk, model_dim]
  double* at = table.data<double>();
  for (int64_t row = 0; row < k_len; ++row) {
    int64_t dist = k_len - 1 - row;
    if (clamp_len_ > 0) dist = std::min(dist, clamp_len_);
    for (int64_t c = 0; c < half; ++c) {
      const double angle = static_cast<double>(dist) * frequency[c];
      at[row * model_dim_ + c] = std::sin(angle);
      at[row * model_dim_ + half + c] = std::cos(angle);
    }
  }
  sinusoids_ = table.to(dtype).to(device);
  ++sinusoid_tables_built_;
  return sinusoids_;
}

Var RelXlAttention::forward(const Var& q, const Var& k, const Var& v, const AttentionInputs& in) {
  const AttentionDims d = check_attention_inputs(kWho, q, k, v, in);
  RELPOS_CHECK(in.causal, kWho,
               "Transformer-XL attention is causal: the relative distance (M + i) - j is only "
               "embedded for keys at or before the query; got causal = false");
  RELPOS_CHECK(d.k_len >= d.q_len, kWho,
               "keys must be [memory; segment], so Lk >= Lq; got Lq {} and Lk {}", d.q_len,
               d.k_len);
  RELPOS_CHECK(d.heads == heads_ && d.head_dim == head_dim_, kWho,
               "built for {} heads of size {}, got q {}", heads_, head_dim_, q.value().str());
  const Var u = reshape(r_w_bias_, {1, heads_, 1, head_dim_});   // [1, H, 1, D]
  const Var vb = reshape(r_r_bias_, {1, heads_, 1, head_dim_});  // [1, H, 1, D]
  const Device device = q.value().device();
  const Var bias = in.positional != nullptr ? in.positional->score_bias(q, d.k_len, in) : Var();
  if (fused_ && !bias.defined()) {  // (a)-(d) inside the op's tiles
    const Var r = relative_embeddings(d.k_len, q.dtype(), device, true);  // row δ: distance δ
    AttentionSpec spec = fused_attention_spec(in, head_dim_, dropout_);
    spec.rel_offset = d.k_len - d.q_len;  // query i sits at key position M + i
    spec.rel_max = d.k_len - 1;           // (future pairs read row 0; causality blocks them)
    return attention(q + u, k, v, q + vb, r, spec, gen_, is_training());
  }
  const Var r = relative_embeddings(d.k_len, q.dtype(), device, false);
  Var ac = matmul(q + u, k, false, true);              // (a) + (c): [B, H, Lq, Lk]
  Var bd = rel_shift(matmul(q + vb, r, false, true));  // (b) + (d): [B, H, Lq, Lk]
  Var scores = ac + bd;
  if (bias.defined()) scores = scores + bias;
  // Causal (query i at key position M + i) also hides the rel-shift's spill-over right of M + i.
  return softmax_attention_from_scores(scores, q, v, in, dropout_, gen_, is_training());
}

Var RelXlAttention::relative_embeddings(int64_t k_len, DType dtype, Device device,
                                        bool by_distance) {
  Tensor sinusoids = relative_sinusoids(k_len, dtype, device);  // [Lk, model_dim]
  if (distance_dropout_ != nullptr)                             // the identity in eval mode
    sinusoids = distance_dropout_->apply(sinusoids, draws_distance_mask_);
  if (by_distance) {  // rows reversed: row c embeds distance c
    const Tensor reversed = sub(full({k_len}, static_cast<double>(k_len - 1), DType::i64, device),
                                arange(0, static_cast<double>(k_len), 1, DType::i64, device));
    sinusoids = index_select(sinusoids, 0, reversed);
  }
  const Var r = r_net_->forward(Var(sinusoids));                   // [Lk, H*D]
  return transpose(reshape(r, {k_len, heads_, head_dim_}), 0, 1);  // [H, Lk, D]
}

RELPOS_REGISTER_ATTENTION("rel_xl", RelXlAttention);

}  // namespace relpos
