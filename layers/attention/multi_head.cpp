// MultiHeadAttention (layers/attention/multi_head.h).
#include "layers/attention/multi_head.h"

#include "autograd/functions.h"
#include "layers/attention/index_attention.h"
#include "layers/init.h"

namespace relpos {
namespace {

std::shared_ptr<Linear> xavier_linear(int64_t in, int64_t out, bool bias, DType dtype,
                                      Generator& gen) {
  auto linear = std::make_shared<Linear>(in, out, bias, dtype, gen);
  xavier_uniform_(linear->weight().value(), gen);
  if (bias) constant_(linear->bias().value(), 0.0);
  return linear;
}

// [B, L, H*D] -> [B, H, L, D]
Var split_heads(const Var& x, int64_t heads) {
  const int64_t batch = x.size(0), len = x.size(1), dim = x.size(2) / heads;
  return transpose(reshape(x, {batch, len, heads, dim}), 1, 2);
}

// [B, H, L, D] -> [B, L, H*D]
Var merge_heads(const Var& x) {
  const int64_t batch = x.size(0), heads = x.size(1), len = x.size(2), dim = x.size(3);
  return reshape(contiguous(transpose(x, 1, 2)), {batch, len, heads * dim});
}

}  // namespace

Var attend(Attention& attention, Positional* positional, const Var& q, const Var& k, const Var& v,
           AttentionInputs in) {
  in.positional = positional;
  if (positional == nullptr) return attention.forward(q, k, v, in);
  auto [q2, k2] = positional->transform_qk(q, k, in);
  Var y = attention.forward(q2, k2, v, in);
  Var extra = positional->output_term(v, q.size(2), in);
  return extra.defined() ? y + extra : y;
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionConfig& c)
    : model_dim_(c.model_dim), heads_(c.num_heads) {
  const int64_t qkv_dim = c.qkv_dim > 0 ? c.qkv_dim : c.model_dim;
  RELPOS_CHECK(c.model_dim > 0 && c.num_heads > 0 && qkv_dim % c.num_heads == 0,
               "MultiHeadAttention",
               "model_dim {} must be positive and qkv_dim {} a positive multiple of num_heads {}",
               c.model_dim, qkv_dim, c.num_heads);
  head_dim_ = qkv_dim / heads_;
  Generator& gen = c.gen != nullptr ? *c.gen : default_generator();
  q_proj_ = register_module("q_proj", xavier_linear(model_dim_, qkv_dim, c.bias, c.dtype, gen));
  k_proj_ = register_module("k_proj", xavier_linear(model_dim_, qkv_dim, c.bias, c.dtype, gen));
  v_proj_ = register_module("v_proj", xavier_linear(model_dim_, qkv_dim, c.bias, c.dtype, gen));
  RELPOS_CHECK(c.head_combiner == "concat" || c.head_combiner == "stacked", "MultiHeadAttention",
               "head_combiner must be concat or stacked, got '{}'", c.head_combiner);
  if (c.head_combiner == "concat") {
    out_proj_ =
        register_module("out_proj", xavier_linear(qkv_dim, model_dim_, c.bias, c.dtype, gen));
  } else {
    RELPOS_CHECK(model_dim_ % head_dim_ == 0, "MultiHeadAttention",
                 "stacked heads give head_dim x outputs features per token: model_dim {} must be "
                 "a multiple of the head size {} (qkv_dim {} / num_heads {})",
                 model_dim_, head_dim_, qkv_dim, heads_);
    combiner_ = register_module(
        "combiner", std::make_shared<StackedHeads>(StackedHeadsConfig{
                        heads_, c.stacked_hidden, model_dim_ / head_dim_, c.dtype, &gen}));
  }

  // The encoding first: a q/k rewrite may change the size the variant is built for.
  AttentionOptions opt{c.positional, heads_, head_dim_,       model_dim_,    c.max_len,
                       c.dtype,      &gen,   c.special_front, c.special_back};
  opt.direction = c.direction;
  RELPOS_CHECK(c.shared_positional == nullptr || c.positional.empty(), "MultiHeadAttention",
               "give either positional options or a shared positional encoding, not both");
  positional_ = c.shared_positional != nullptr ? c.shared_positional : make_positional(opt);
  opt.options = c.attention;
  opt.dropout = c.dropout;
  if (positional_ != nullptr) opt.head_dim = positional_->qk_dim(head_dim_);
  attention_ = register_module("attention", make_attention(opt));
  if (positional_ != nullptr) {
    RELPOS_CHECK(!attention_->caps().own_positions, "MultiHeadAttention",
                 "attention '{}' encodes relative positions itself: it hosts no positional "
                 "encoding (got '{}')",
                 attention_->name(), positional_->name());
    positional_->check_host(*attention_);
    register_module("positional", positional_);
  }
}

Var MultiHeadAttention::forward(const Var& x_q, const Var& x_kv, AttentionInputs in) {
  const auto scope = profile_scope();
  RELPOS_CHECK(x_q.dim() == 3 && x_kv.dim() == 3 && x_q.size(2) == model_dim_ &&
                   x_kv.size(2) == model_dim_ && x_q.size(0) == x_kv.size(0),
               "MultiHeadAttention", "inputs must be [batch, length, {}], got {} and {}",
               model_dim_, x_q.value().str(), x_kv.value().str());
  const Var q = split_heads(q_proj_->forward(x_q), heads_);             // [B, H, Lq, D]
  const Var k = split_heads(k_proj_->forward(x_kv), heads_);            // [B, H, Lk, D]
  const Var v = split_heads(v_proj_->forward(x_kv), heads_);            // [B, H, Lk, D]
  return combine(attend(*attention_, positional_.get(), q, k, v, in));  // [B, H, Lq, D] in
}

Var MultiHeadAttention::forward_index_first(const Tensor& ids, const Var& table,
                                            const Var& positions, const Tensor& key_mask,
                                            bool causal) {
  const auto scope = profile_scope();
  RELPOS_CHECK(attention_->name() == "softmax" && positional_ == nullptr, "MultiHeadAttention",
               "index-first attention (ISDPA) computes softmax attention over absolute inputs; "
               "got attention '{}'{}",
               attention_->name(),
               positional_ != nullptr ? " with positional '" + positional_->name() + "'" : "");
  RELPOS_CHECK(table.dim() == 2 && table.size(1) == model_dim_, "MultiHeadAttention",
               "index-first attention needs a table [vocab, {}], got {}", model_dim_,
               table.value().str());
  return combine(index_first_heads(ids, table, positions, *q_proj_, *k_proj_, *v_proj_, heads_,
                                   key_mask, causal));
}

Var MultiHeadAttention::combine(const Var& heads) const {
  if (combiner_ != nullptr) return combiner_->forward(heads);  // [B, L, model_dim]
  return out_proj_->forward(merge_heads(heads));
}

}  // namespace relpos
