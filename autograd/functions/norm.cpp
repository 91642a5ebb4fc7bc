// softmax, log_softmax, layer_norm, dropout and cross_entropy. Backward goes through the fused
// core backward ops (softmax_backward and log_softmax_backward from the saved output,
// layer_norm_backward from the saved mean/rstd, cross_entropy_backward from the logits).
#include "autograd/functions.h"

namespace relpos {

Var softmax(const Var& x, int64_t dim) {
  Tensor y = softmax(x.value(), dim);
  return make_result("softmax", y, {x}, [y, dim](const Tensor& g) {
    return std::vector<Tensor>{softmax_backward(y, g, dim)};
  });
}

Var log_softmax(const Var& x, int64_t dim) {
  Tensor y = log_softmax(x.value(), dim);
  return make_result("log_softmax", y, {x}, [y, dim](const Tensor& g) {
    return std::vector<Tensor>{log_softmax_backward(y, g, dim)};
  });
}

Var layer_norm(const Var& x, const Var& weight, const Var& bias, double eps) {
  // Undefined weight/bias Vars mean no affine part; they are left out of the node's inputs, so
  // the gradients returned below follow the same order: dx, then dweight and dbias if present.
  const Tensor w = weight.defined() ? weight.value() : Tensor();
  const Tensor b = bias.defined() ? bias.value() : Tensor();
  LayerNormResult r = layer_norm(x.value(), w, b, eps);  // y: [..., D], mean/rstd: [...]
  std::vector<Var> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  const bool has_bias = bias.defined();
  return make_result("layer_norm", r.y, std::move(inputs),
                     [x = x.value(), mean = r.mean, rstd = r.rstd, w, has_bias](const Tensor& g) {
                       LayerNormGrads d = layer_norm_backward(g, x, mean, rstd, w, has_bias);
                       std::vector<Tensor> grads{d.dx};
                       if (w.defined()) grads.push_back(d.dweight);
                       if (has_bias) grads.push_back(d.dbias);
                       return grads;
                     });
}

Var dropout(const Var& x, double p, Generator& gen, bool training) {
  if (!training || p == 0) return x;
  // mask: [*x.shape] u8; y = x * mask / (1 - p) and, being linear in x, dx = g * mask / (1 - p).
  Tensor mask = dropout_mask(x.shape(), p, gen, x.device());
  return make_result(
      "dropout", apply_dropout_mask(x.value(), mask, p), {x},
      [mask, p](const Tensor& g) { return std::vector<Tensor>{apply_dropout_mask(g, mask, p)}; });
}

Var cross_entropy(const Var& logits, const Tensor& target, int64_t ignore_index,
                  Reduction reduction) {
  // logits: [N, C], target: [N]; loss: [N] (none) or [] (mean, sum).
  Tensor loss = cross_entropy(logits.value(), target, ignore_index, reduction);
  return make_result(
      "cross_entropy", loss, {logits},
      [x = logits.value(), target, ignore_index, reduction](const Tensor& g) {
        return std::vector<Tensor>{cross_entropy_backward(x, target, g, ignore_index, reduction)};
      });
}

}  // namespace relpos
