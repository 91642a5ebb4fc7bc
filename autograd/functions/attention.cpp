// The fused attention op as a differentiable function, with or without Transformer-XL's position
// term: the backward recomputes the weights from the saved output and log-sum-exp
// (core/ops/attention.cpp). In a bf16 autocast scope (autograd/autocast.h) its f32 operands are
// rounded to bf16 and kept so for the backward, as PyTorch's autocast does for its fused
// attention; the output and the gradients return to the operands' f32 (exactly), as a product's do.
#include "autograd/autocast.h"
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

// The op on the inputs' values (rounded in a bf16 scope); the output in the inputs' dtype.
Var attention_of(const std::vector<Var>& inputs, AttentionSpec spec) {
  const DType dtype = inputs[0].value().dtype();
  std::vector<Tensor> x;
  for (const Var& input : inputs) x.push_back(autocast_operand(input.value()));
  if (x.size() == 5) spec.rel_query = x[3], spec.rel_key = x[4];
  AttentionResult r = attention(x[0], x[1], x[2], spec);
  const DType operands = x[0].dtype();
  return make_result(
      "attention", cast(r.out, dtype), inputs, [x, r, spec, dtype, operands](const Tensor& g) {
        const AttentionGrads d = attention_backward(cast(g, operands), x[0], x[1], x[2], r, spec);
        std::vector<Tensor> grads{d.dq, d.dk, d.dv};
        if (x.size() == 5) grads.insert(grads.end(), {d.drel_query, d.drel_key});
        for (Tensor& t : grads) t = cast(t, dtype);
        return grads;
      });
}

}  // namespace

Var attention(const Var& q, const Var& k, const Var& v, AttentionSpec spec, Generator& gen,
              bool training) {
  draw_dropout_stream(q, k, spec, gen, training);
  return attention_of({q, k, v}, spec);
}

Var attention(const Var& q, const Var& k, const Var& v, const Var& rel_query, const Var& rel_key,
              AttentionSpec spec, Generator& gen, bool training) {
  draw_dropout_stream(q, k, spec, gen, training);
  return attention_of({q, k, v, rel_query, rel_key}, spec);
}

}  // namespace relpos
