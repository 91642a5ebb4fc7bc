// The transformer MLP's fused second half (autograd/functions.h activation_dropout_linear):
// act, dropout and fc2 in one node that keeps fc1's output instead of the activation.
#include "autograd/autocast.h"
#include "autograd/functions.h"
#include "autograd/sum_to.h"

namespace relpos {
namespace {

// act(h), dropped with a mask drawn from `gen` (the backward draws again from a copy of the state
// the forward drew at, so the masks are the same). mask: left undefined without dropout.
Tensor dropped_activation(const Tensor& h, Activation act, double p, Generator& gen, Tensor& mask) {
  Tensor a = act == Activation::gelu ? gelu(h) : relu(h);
  if (p == 0) return a;
  mask = dropout_mask(a.shape(), p, gen, a.device());
  apply_dropout_mask_(a, mask, p);
  return a;
}

}  // namespace

Var activate(Activation act, const Var& x) {
  return act == Activation::gelu ? gelu(x) : relu(x);
}

Var activation_dropout_linear(const Var& h, Activation act, double p, Generator& gen, bool training,
                              const Var& weight, const Var& bias) {
  RELPOS_CHECK(h.dim() == 2 && weight.dim() == 2 && h.size(1) == weight.size(1),
               "activation_dropout_linear",
               "h [N, hidden] and weight [out, hidden] disagree: {} {}", h.value().str(),
               weight.value().str());
  const double drop = training ? p : 0.0;
  const Generator drawn_at = gen;
  Tensor mask;
  // Under bf16 autocast (autograd/autocast.h) the node runs as PyTorch's autocast runs linear,
  // act, dropout and linear: h (fc1's output) is rounded to bf16 and kept so; act(h), its dropout,
  // and in the backward fc2's input gradient and act's are bf16 tensors, each computed in f32 and
  // rounded once; fc2's operands are bf16 with f32 sums. h's gradient returns in f32 (the values
  // of the bf16 one).
  const bool rounded = autocast_dtype() == DType::bf16 && h.value().dtype() == DType::f32 &&
                       weight.value().dtype() == DType::f32;
  const Tensor h_saved = rounded ? cast(h.value(), DType::bf16) : h.value();  // [N, hidden]
  const Tensor w_saved = rounded ? cast(weight.value(), DType::bf16) : weight.value();
  Tensor y = product(dropped_activation(h_saved, act, drop, gen, mask), w_saved, false,
                     true);  // [N, out]
  std::vector<Var> inputs{h, weight};
  const bool has_bias = bias.defined();
  if (has_bias) {
    y = add(y, bias.value());
    inputs.push_back(bias);
  }
  const bool gh = h.requires_grad(), gw = weight.requires_grad();
  return make_result(
      "activation_dropout_linear", y, std::move(inputs),
      [h = h_saved, w = w_saved, rounded, act, drop, drawn_at, gh, gw,
       has_bias](const Tensor& g_in) {
        // Rounded once for both products; the bias gradient sums the exact one.
        const Tensor g = rounded ? cast(g_in, DType::bf16) : g_in;  // [N, out]
        Generator replay = drawn_at;
        Tensor mask;
        Tensor a = dropped_activation(h, act, drop, replay, mask);  // [N, hidden], h's dtype
        std::vector<Tensor> grads(2);
        if (gw) grads[1] = product(g, a, true, false);  // [out, hidden]
        a = Tensor();                                   // released before the [N, hidden] grads
        if (gh) {
          Tensor da = rounded ? matmul(g, w, false, false)  // [N, hidden]: bf16
                              : product(g, w, false, false);
          if (drop > 0) apply_dropout_mask_(da, mask, drop);
          const Tensor dh = act == Activation::gelu ? gelu_backward(h, da) : relu_backward(h, da);
          grads[0] = rounded ? cast(dh, DType::f32) : dh;
        }
        if (has_bias) grads.push_back(sum_to(g_in, Shape{w.size(0)}));  // [out]
        return grads;
      });
}

}  // namespace relpos
