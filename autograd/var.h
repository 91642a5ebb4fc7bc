// Var: a shared handle to {value, grad, requires_grad, grad_fn}. Layers and models compute with
// Vars; each differentiable function records a Node with edges to its inputs and a backward closure
// over the tensors it saved (autograd/functions/).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace relpos {

struct Node;
struct VarImpl {
  Tensor value;
  Tensor grad;  // undefined until a backward pass reaches this leaf
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
};

class Var {
 public:
  Var() = default;
  // A leaf; with requires_grad, backward() accumulates into grad().
  explicit Var(Tensor value, bool requires_grad = false);
  static Var from_node(Tensor value, std::shared_ptr<Node> grad_fn);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& value() const { return impl_->value; }
  const Tensor& grad() const { return impl_->grad; }
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return impl_->grad_fn; }

  const Shape& shape() const { return impl_->value.shape(); }
  int dim() const { return impl_->value.dim(); }
  int64_t size(int64_t d) const { return impl_->value.size(d); }
  int64_t numel() const { return impl_->value.numel(); }
  DType dtype() const { return impl_->value.dtype(); }
  Device device() const { return impl_->value.device(); }

  void set_requires_grad(bool on);
  void set_grad(const Tensor& grad) { impl_->grad = grad; }
  void zero_grad() { impl_->grad = Tensor(); }
  // Replaces the value of a leaf (optimizer steps, loading checkpoints); shapes must match.
  void set_value(const Tensor& value);
  // The same value, cut from the graph.
  Var detach() const { return Var(impl_->value, false); }

  // Reverse-mode pass from this Var. grad defaults to 1 for a one-element output.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;

  VarImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<VarImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<VarImpl> impl_;
};

// Gradients of a function's inputs from the gradient of its output; one entry per input,
// undefined where an input needs none.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out)>;

// Where an input's gradient goes: the node that produced it, or the leaf itself. Edges hold no
// values, so a graph keeps alive only what the backward closures saved (as in torch).
struct Edge {
  std::shared_ptr<Node> node;     // producer of a non-leaf input
  std::shared_ptr<VarImpl> leaf;  // or the leaf (a parameter or input) to accumulate into
  Shape shape;                    // the input's shape, to check the gradient against
  bool active() const { return node != nullptr || leaf != nullptr; }
};

struct Node {
  std::string name;         // the function's name, for anomaly and shape errors
  std::vector<Edge> edges;  // one per input; inactive where the input needs no gradient
  BackwardFn backward;      // empty once released
  // While the profiler records (autograd/profiler.h): the module whose forward made the node.
  const std::string* profile_module = nullptr;
};

// Wraps a function's forward result: records a Node when grad mode is on and some input requires
// grad; otherwise the closure (and what it saved) is dropped at once. Runs the anomaly check.
Var make_result(const char* name, Tensor value, std::vector<Var> inputs, BackwardFn backward);

}  // namespace relpos
