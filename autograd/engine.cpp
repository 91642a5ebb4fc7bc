// The backward engine: topological order of the nodes from the output, gradient accumulation
// into leaves (reporting each leaf whose gradient is complete to the GradReadyHook in force),
// and release of each node's saved tensors as soon as its backward has run.
#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "autograd/grad_ready.h"
#include "autograd/profiler.h"
#include "autograd/var.h"
#include "core/ops.h"

namespace relpos {

namespace {

// Nodes reachable from `root`, each after every node that consumes its output (reverse
// post-order of an iterative depth-first search).
std::vector<Node*> topological_order(Node* root) {
  std::vector<Node*> post;
  std::unordered_set<Node*> visited{root};
  std::vector<std::pair<Node*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->edges.size()) {
      Node* child = node->edges[next++].node.get();
      if (child != nullptr && visited.insert(child).second) stack.push_back({child, 0});
      continue;
    }
    post.push_back(node);
    stack.pop_back();
  }
  return {post.rbegin(), post.rend()};
}

void accumulate_leaf(VarImpl& leaf, const Tensor& g) {
  leaf.grad = leaf.grad.defined() ? add(leaf.grad, g) : g.clone();
}

thread_local GradReadyHook t_grad_ready_hook;

// Leaf edges still to be passed in this backward pass, per leaf; the leaf is reported to the
// hook when its count reaches 0 (its gradient is complete).
class PendingLeaves {
 public:
  PendingLeaves(const std::vector<Node*>& order, const GradReadyHook& hook) : hook_(hook) {
    if (!hook_) return;
    for (const Node* node : order)
      for (const Edge& e : node->edges)
        if (e.leaf) ++pending_[e.leaf.get()];
  }
  // Called once for every node of the order, whether or not a gradient reached it.
  void passed(const Node& node) {
    if (!hook_) return;
    for (const Edge& e : node.edges)
      if (e.leaf && --pending_[e.leaf.get()] == 0 && e.leaf->grad.defined()) hook_(*e.leaf);
  }

 private:
  const GradReadyHook& hook_;
  std::unordered_map<VarImpl*, int64_t> pending_;
};

}  // namespace

GradReadyScope::GradReadyScope(GradReadyHook hook) : previous_(std::move(t_grad_ready_hook)) {
  t_grad_ready_hook = std::move(hook);
}
GradReadyScope::~GradReadyScope() {
  t_grad_ready_hook = std::move(previous_);
}
const GradReadyHook& grad_ready_hook() {
  return t_grad_ready_hook;
}

void Var::backward(const Tensor& grad, bool retain_graph) const {
  RELPOS_CHECK(defined() && requires_grad(), "backward",
               "the output does not require grad (no input of the graph has requires_grad, or it "
               "was computed under NoGradGuard)");
  Tensor seed = grad;
  if (!seed.defined()) {
    RELPOS_CHECK(numel() == 1, "backward",
                 "a gradient must be given for an output of shape {} (only one-element outputs "
                 "get the implicit gradient 1)",
                 shape_str(shape()));
    seed = full(shape(), 1.0, dtype(), device());
  }
  RELPOS_CHECK(seed.shape() == shape() && seed.dtype() == dtype(), "backward",
               "gradient {} does not match the output {}", seed.str(), value().str());
  if (is_leaf()) {
    accumulate_leaf(*impl_, seed);
    if (t_grad_ready_hook) t_grad_ready_hook(*impl_);
    return;
  }

  std::unordered_map<Node*, Tensor> grads{{grad_fn().get(), seed}};
  std::vector<Edge> keep_alive;  // edges of released nodes, alive until the pass ends
  const std::vector<Node*> order = topological_order(grad_fn().get());
  PendingLeaves pending(order, t_grad_ready_hook);
  for (Node* node : order) {
    auto found = grads.find(node);
    if (found == grads.end()) {  // no path carried a gradient here
      pending.passed(*node);
      continue;
    }
    const Tensor g = std::move(found->second);
    grads.erase(found);
    RELPOS_CHECK(node->backward != nullptr, "backward",
                 "the graph through {} was already freed by an earlier backward; pass "
                 "retain_graph=true to the first call",
                 node->name);
    std::vector<Tensor> in_grads;
    {
      const profile::BackwardScope timed(node->name, node->profile_module);
      in_grads = node->backward(g);
    }
    RELPOS_CHECK(in_grads.size() == node->edges.size(), "backward",
                 "{} returned {} gradients for {} inputs", node->name, in_grads.size(),
                 node->edges.size());
    for (size_t i = 0; i < in_grads.size(); ++i) {
      const Edge& e = node->edges[i];
      if (!e.active() || !in_grads[i].defined()) continue;
      RELPOS_CHECK(in_grads[i].shape() == e.shape, "backward",
                   "{} produced a gradient {} for input {} of shape {}", node->name,
                   in_grads[i].str(), i, shape_str(e.shape));
      check_anomaly(in_grads[i], node->name, "backward gradient");
      if (e.leaf) {
        accumulate_leaf(*e.leaf, in_grads[i]);
      } else {
        auto [it, inserted] = grads.try_emplace(e.node.get(), in_grads[i]);
        if (!inserted) it->second = add(it->second, in_grads[i]);
      }
    }
    pending.passed(*node);
    if (!retain_graph) {  // release saved tensors and the edges below
      node->backward = nullptr;
      std::move(node->edges.begin(), node->edges.end(), std::back_inserter(keep_alive));
      node->edges.clear();
    }
  }
}

}  // namespace relpos
