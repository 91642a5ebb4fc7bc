// ISDPA (seed 001 §2.2–2.3, Algorithm 1), per head h with Meta = F·W, Pos = P·W:
//   QKᵀ = Index_col(Index_row(Meta^Q·Meta^Kᵀ, ids), ids) + Index_row(Meta^Q·Pos^Kᵀ, ids)
//       + Index_col(Pos^Q·Meta^Kᵀ, ids) + Pos^Q·Pos^Kᵀ
//   Y = softmax(QKᵀ / sqrt(d_head)) (Index_row(Meta^V, ids) + Pos^V), blocked pairs as masks.h.
// P: the seed's generator (frequencies 1e4^(-1/(d/2)) cumulated, sin on even and cos on odd
// columns) is the table of layers/positional/absolute.h for even d (the seed's code needs an even
// d), so that table is used.
#include "layers/attention/index_attention.h"

#include <cmath>
#include <utility>

#include "autograd/functions.h"
#include "core/deferred_checks.h"
#include "layers/attention/attention.h"
#include "layers/attention/masks.h"
#include "layers/positional/absolute.h"

namespace relpos {

namespace {

constexpr const char* kWho = "IndexAttention";

// [N, H*Dh] -> [H, N, Dh]
Var split_heads(const Var& x, int64_t heads) {
  return transpose(reshape(x, {x.size(0), heads, x.size(1) / heads}), 0, 1);
}

}  // namespace

IndexAttention::IndexAttention(const IndexAttentionConfig& c)
    : vocab_(c.vocab), model_dim_(c.model_dim), heads_(c.num_heads), max_len_(c.max_len) {
  RELPOS_CHECK(vocab_ > 0 && max_len_ > 0, kWho,
               "vocab and max_len must be positive, got {} and {}", vocab_, max_len_);
  RELPOS_CHECK(model_dim_ > 0 && heads_ > 0 && model_dim_ % heads_ == 0, kWho,
               "model_dim {} must be a positive multiple of num_heads {}", model_dim_, heads_);
  head_dim_ = model_dim_ / heads_;
  Generator& gen = c.gen != nullptr ? *c.gen : default_generator();
  embedding_ =
      register_module("embedding", std::make_shared<Embedding>(vocab_, model_dim_, c.dtype, gen));
  fill_(embedding_->weight().value().select(0, 0), 0.0);  // padding id 0
  q_proj_ = register_module("q_proj",
                            std::make_shared<Linear>(model_dim_, model_dim_, false, c.dtype, gen));
  k_proj_ = register_module("k_proj",
                            std::make_shared<Linear>(model_dim_, model_dim_, false, c.dtype, gen));
  v_proj_ = register_module("v_proj",
                            std::make_shared<Linear>(model_dim_, model_dim_, false, c.dtype, gen));
  pe_ = SinusoidalPositionalEmbedding(max_len_, model_dim_, c.dtype).table();
  register_buffer("pe", pe_);
}

void IndexAttention::check_inputs(const Tensor& ids, const Tensor& key_mask) const {
  RELPOS_CHECK(
      ids.dim() == 2 && ids.numel() > 0 && (ids.dtype() == DType::i64 || ids.dtype() == DType::i32),
      kWho, "ids must be a non-empty [batch, length] i32/i64 tensor, got {}", ids.str());
  RELPOS_CHECK(ids.device() == pe_.device(), kWho, "ids {} must be on the module's device {}",
               ids.str(), pe_.device().str());
  RELPOS_CHECK(ids.size(1) <= max_len_, kWho, "sequence length {} exceeds max_len {}", ids.size(1),
               max_len_);
  const int64_t vocab = vocab_;
  const auto check_range = [ids, vocab] {
    const auto low = static_cast<int64_t>(-max(neg(ids)).item());
    const auto high = static_cast<int64_t>(max(ids).item());
    RELPOS_CHECK(low >= 0 && high < vocab, kWho,
                 "token ids must be in [0, vocab = {}), got ids from {} to {}", vocab, low, high);
  };
  if (!device_checks_deferred()) {
    check_range();
  } else {  // a training step: counted on the device, read with the step's other checks
    const Tensor zero = Tensor::scalar(0, ids.dtype(), ids.device());
    const Tensor top = Tensor::scalar(static_cast<double>(vocab), ids.dtype(), ids.device());
    const Tensor outside =
        sum(add(cast(lt(ids, zero), DType::f64), cast(ge(ids, top), DType::f64)));
    defer_device_check(outside.reshape({1}), check_range);
  }
  if (key_mask.defined()) {
    RELPOS_CHECK(key_mask.dtype() == DType::u8 && key_mask.shape() == ids.shape() &&
                     key_mask.device() == ids.device(),
                 kWho, "key_mask must be u8 shaped like ids {} on its device, got {}", ids.str(),
                 key_mask.str());
  }
}

Var index_first_heads(const Tensor& ids, const Var& table, const Var& positions, const Linear& wq,
                      const Linear& wk, const Linear& wv, int64_t heads, const Tensor& key_mask,
                      bool causal) {
  const int64_t B = ids.size(0), L = ids.size(1), V = table.size(0), H = heads;
  const bool with_positions = positions.defined();
  const Var p = with_positions ? slice(positions, 0, 0, L) : Var();  // [L, d]
  // {Meta = F·Wᵀ + b [H, V, Dh], Pos = P·Wᵀ [H, L, Dh]} of one projection: the bias once, with
  // the token's row.
  const auto project = [&](const Linear& w) {
    const Var meta = split_heads(w.forward(table), H);
    const Var pos = with_positions ? split_heads(matmul(p, w.weight(), false, true), H) : Var();
    return std::pair{meta, pos};
  };
  const auto [meta_q, pos_q] = project(wq);
  const auto [meta_k, pos_k] = project(wk);
  const auto [meta_v, pos_v] = project(wv);
  const int64_t Dh = meta_q.size(2);

  const Tensor id = cast(ids, DType::i64);
  const Tensor flat = id.reshape({B * L});  // [B*L]
  // Index_col(Index_row(·, ids), ids) as one lookup of the pair (ids_i, ids_j) in the flat table.
  const Tensor pairs =
      add(mul_scalar(id.reshape({B, L, 1}), static_cast<double>(V)), id.reshape({B, 1, L}))
          .reshape({B * L * L});
  Var mm = reshape(matmul(meta_q, meta_k, false, true), {H, V * V});  // [H, V*V]
  Var scores = reshape(index_select(mm, 1, pairs), {H, B, L, L});     // [H, B, L, L]
  if (with_positions) {
    Var mp = index_select(matmul(meta_q, pos_k, false, true), 1, flat);  // [H, B*L, L]
    Var pm = index_select(matmul(pos_q, meta_k, false, true), 2, flat);  // [H, L, B*L]
    Var pp = reshape(matmul(pos_q, pos_k, false, true), {H, 1, L, L});   // [H, 1, L, L]
    scores = scores + reshape(mp, {H, B, L, L}) + transpose(reshape(pm, {H, L, B, L}), 1, 2) +
             pp;  // [H, B, L, L]
  }
  scores = permute(scores, {1, 0, 2, 3}) * (1.0 / std::sqrt(static_cast<double>(Dh)));

  const Var weights = masked_softmax(scores, {key_mask, causal, nullptr});  // [B, H, L, L]
  // V = Index_row(Meta^V, ids) + Pos^V: [H, B, L, Dh] -> [B, H, L, Dh]
  Var values = reshape(index_select(meta_v, 1, flat), {H, B, L, Dh});
  if (with_positions) values = values + reshape(pos_v, {H, 1, L, Dh});
  return matmul(weights, permute(values, {1, 0, 2, 3}));  // [B, H, L, Dh]
}

Var IndexAttention::heads(const Tensor& ids, const Tensor& key_mask, bool causal) {
  check_inputs(ids, key_mask);
  const int64_t V = vocab_;
  const Device device = ids.device();
  // F with row 0 (padding) frozen as nn.Embedding(padding_idx=0): its value, no gradient.
  const Var& table = embedding_->weight();
  const Tensor pad_row =
      eq(arange(0, static_cast<double>(V), 1, DType::i64, device).reshape({V, 1}),
         zeros({1, 1}, DType::i64, device));
  const Var f = where(pad_row, table.detach(), table);  // [V, d]
  return index_first_heads(ids, f, Var(pe_), *q_proj_, *k_proj_, *v_proj_, heads_, key_mask,
                           causal);
}

Var IndexAttention::forward(const Tensor& ids, const Tensor& key_mask, bool causal) {
  const auto scope = profile_scope();
  const Var y = heads(ids, key_mask, causal);  // [B, H, L, Dh]
  return reshape(contiguous(transpose(y, 1, 2)), {y.size(0), y.size(2), model_dim_});
}

}  // namespace relpos
