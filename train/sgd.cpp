// SGD with momentum, dampening, Nesterov and L2 weight decay, as torch.optim.SGD:
//   g = grad + wd·p;  buf = g (first step) or momentum·buf + (1 − dampening)·g;
//   g = g + momentum·buf (nesterov) or buf;  p −= lr·g.
#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/ops.h"
#include "train/optimizer.h"

namespace relpos {
namespace {

class Sgd : public Optimizer {
 public:
  Sgd(const std::vector<Var>& params, const Options& options)
      : Optimizer(params, options.require<double>("lr")),
        momentum_(options.get<double>("momentum", 0.0)),
        dampening_(options.get<double>("dampening", 0.0)),
        weight_decay_(options.get<double>("weight_decay", 0.0)),
        nesterov_(options.get<bool>("nesterov", false)) {
    RELPOS_CHECK(std::isfinite(weight_decay_) && weight_decay_ >= 0, options.where(),
                 "weight_decay must be finite and >= 0, got {}", weight_decay_);
    // A buffer kept whole or grown each step (momentum >= 1), or a gradient that enters it
    // negated (dampening > 1), never settles: the coefficients of a running average.
    RELPOS_CHECK(momentum_ >= 0 && momentum_ < 1, options.where(),
                 "momentum must lie in [0, 1), got {}", momentum_);
    RELPOS_CHECK(dampening_ >= 0 && dampening_ <= 1, options.where(),
                 "dampening must lie in [0, 1], got {}", dampening_);
    RELPOS_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), options.where(),
                 "nesterov needs momentum > 0 and dampening 0");
  }

 protected:
  void update(size_t index, Var& param, const Tensor& grad) override {
    const Tensor& p = param.value();
    Tensor g = weight_decay_ != 0 ? add(grad, mul_scalar(p, weight_decay_)) : grad;
    if (momentum_ != 0) {
      State& s = state()[index];
      auto it = s.find("momentum_buffer");
      Tensor buf = it == s.end()
                       ? g.clone()
                       : add(mul_scalar(it->second, momentum_), mul_scalar(g, 1 - dampening_));
      s["momentum_buffer"] = buf;
      g = nesterov_ ? add(g, mul_scalar(buf, momentum_)) : buf;
    }
    param.set_value(sub(p, mul_scalar(g, lr_of(index))));
  }

 private:
  double momentum_, dampening_, weight_decay_;
  bool nesterov_;
};

}  // namespace

RELPOS_REGISTER_OPTIMIZER("sgd", Sgd);

}  // namespace relpos
