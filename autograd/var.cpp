#include "autograd/var.h"

#include "autograd/grad_mode.h"
#include "autograd/profiler.h"

namespace relpos {

Var::Var(Tensor value, bool requires_grad) : impl_(std::make_shared<VarImpl>()) {
  RELPOS_CHECK(value.defined(), "Var", "cannot wrap an undefined tensor");
  impl_->value = std::move(value);
  set_requires_grad(requires_grad);
}

Var Var::from_node(Tensor value, std::shared_ptr<Node> grad_fn) {
  Var v(std::move(value), false);
  v.impl_->requires_grad = true;
  v.impl_->grad_fn = std::move(grad_fn);
  return v;
}

void Var::set_requires_grad(bool on) {
  RELPOS_CHECK(is_leaf(), "Var", "requires_grad can only be set on a leaf");
  RELPOS_CHECK(!on || is_floating(impl_->value.dtype()), "Var",
               "only floating tensors can require grad, got {}", impl_->value.str());
  impl_->requires_grad = on;
}

void Var::set_value(const Tensor& value) {
  RELPOS_CHECK(is_leaf(), "Var", "set_value on a non-leaf");
  RELPOS_CHECK(value.shape() == impl_->value.shape() && value.dtype() == impl_->value.dtype(),
               "Var", "set_value with {} on a Var holding {}", value.str(), impl_->value.str());
  impl_->value = value;
}

Var make_result(const char* name, Tensor value, std::vector<Var> inputs, BackwardFn backward) {
  profile::forward_op(name);
  check_anomaly(value, name, "forward output");
  bool needs_grad = false;
  if (grad_enabled())
    for (const Var& in : inputs) needs_grad = needs_grad || in.requires_grad();
  if (!needs_grad) return Var(std::move(value), false);
  auto node = std::make_shared<Node>();
  node->name = name;
  node->profile_module = profile::current_module();
  for (const Var& in : inputs) {
    Edge e;
    if (in.requires_grad()) {
      e.shape = in.shape();
      if (in.is_leaf())
        e.leaf = in.impl_ptr();
      else
        e.node = in.grad_fn();
    }
    node->edges.push_back(std::move(e));
  }
  node->backward = std::move(backward);
  return Var::from_node(std::move(value), std::move(node));
}

}  // namespace relpos
