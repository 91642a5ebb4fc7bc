// The fused attention op as a differentiable function, with or without Transformer-XL's position
// term: the backward recomputes the weights from the saved output and log-sum-exp
// (core/ops/attention.cpp).
#include "autograd/functions.h"
#include "core/philox.h"

namespace relpos {

namespace {

// The dropout stream of a training call: the blocks dropout_mask({B, H, Lq, Lk}) would take.
void draw_dropout_stream(const Var& q, const Var& k, AttentionSpec& spec, Generator& gen,
                         bool training) {
  if (!training) spec.dropout = 0;
  if (spec.dropout > 0 && q.dim() == 4 && k.dim() == 4) {  // (other shapes: the op refuses)
    const auto weights = static_cast<uint64_t>(q.size(0) * q.size(1) * q.size(2) * k.size(2));
    spec.seed = gen.seed();
    spec.offset = gen.reserve(philox::blocks_for_uniform(weights));
  }
}

}  // namespace

Var attention(const Var& q, const Var& k, const Var& v, AttentionSpec spec, Generator& gen,
              bool training) {
  draw_dropout_stream(q, k, spec, gen, training);
  AttentionResult r = attention(q.value(), k.value(), v.value(), spec);
  Tensor out = r.out;
  return make_result("attention", out, {q, k, v},
                     [qv = q.value(), kv = k.value(), vv = v.value(), r, spec](const Tensor& g) {
                       AttentionGrads d = attention_backward(g, qv, kv, vv, r, spec);
                       return std::vector<Tensor>{d.dq, d.dk, d.dv};
                     });
}

Var attention(const Var& q, const Var& k, const Var& v, const Var& rel_query, const Var& rel_key,
              AttentionSpec spec, Generator& gen, bool training) {
  draw_dropout_stream(q, k, spec, gen, training);
  spec.rel_query = rel_query.value();
  spec.rel_key = rel_key.value();
  AttentionResult r = attention(q.value(), k.value(), v.value(), spec);
  Tensor out = r.out;
  return make_result("attention", out, {q, k, v, rel_query, rel_key},
                     [qv = q.value(), kv = k.value(), vv = v.value(), r, spec](const Tensor& g) {
                       AttentionGrads d = attention_backward(g, qv, kv, vv, r, spec);
                       return std::vector<Tensor>{d.dq, d.dk, d.dv, d.drel_query, d.drel_key};
                     });
}

}  // namespace relpos
