// softmax: scaled dot-product attention (Vaswani et al. 2017, eq. 1),
//   Y = softmax((Q·Kᵀ + S) / sqrt(D)) V,
// with S a positional score bias when the layer has one (Shaw, skew: seed 004 eq. 1). Blocked
// pairs (padding, causal) weigh exactly 0 (masks.h), so a query that sees no key outputs zeros.
// It runs as the fused attention op (core/ops.h: tiles and an online softmax, memory linear in
// L), with S inside the tiles where the encoding gives it as a table of distances (on the CPU);
// with another score bias, on CUDA with a table, or with `fused: false`, as its naive twin that
// forms the [Lq, Lk] weights (masks.h softmax_attention_from_scores). Both draw the same dropout
// mask.
// Options: dropout (on the attention weights), fused (true).
#include "autograd/functions.h"
#include "layers/attention/attention.h"
#include "layers/attention/masks.h"
#include "layers/attention/positional.h"
#include "layers/init.h"

namespace relpos {
namespace {

class SoftmaxAttention final : public Attention {
 public:
  explicit SoftmaxAttention(const AttentionOptions& opt)
      : dropout_(opt.options.get_inherited<double>("dropout", opt.dropout)),
        fused_(opt.options.get<bool>("fused", true)),
        gen_(fork_generator(opt.generator())) {
    RELPOS_CHECK(dropout_ >= 0 && dropout_ < 1, "attention softmax",
                 "dropout must be in [0, 1), got {}", dropout_);
    register_generator("generator", gen_);
  }

  Var forward(const Var& q, const Var& k, const Var& v, const AttentionInputs& in) override {
    check_attention_inputs("attention softmax", q, k, v, in);
    AttentionSpec spec = fused_attention_spec(in, q.size(3), dropout_);
    if (fused_ && in.positional != nullptr) {
      const PositionTable t = in.positional->position_table(q, k.size(2), in);
      if (t.table.defined()) {  // the score bias inside the op's tiles
        spec.rel_offset = t.offset;
        spec.rel_min = t.min;
        spec.rel_max = t.max;
        return attention(q, k, v, t.query, t.table, spec, gen_, is_training());
      }
    }
    const Var bias = in.positional != nullptr ? in.positional->score_bias(q, k.size(2), in) : Var();
    if (fused_ && !bias.defined()) return attention(q, k, v, spec, gen_, is_training());
    Var scores = matmul(q, k, false, true);  // [B, H, Lq, Lk]
    if (bias.defined()) scores = scores + bias;
    return softmax_attention_from_scores(scores, q, v, in, dropout_, gen_, is_training());
  }

  AttentionCaps caps() const override {
    return {
        .forms_scores = true, .kernelized = false, .fused = fused_, .takes_position_table = fused_};
  }
  std::string name() const override { return "softmax"; }

 private:
  double dropout_;
  bool fused_;
  Generator gen_;
};

}  // namespace

RELPOS_REGISTER_ATTENTION("softmax", SoftmaxAttention);

}  // namespace relpos
