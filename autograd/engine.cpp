// The backward engine: topological order of the nodes from the output, gradient accumulation
// into leaves, and release of each node's saved tensors as soon as its backward has run.
#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "autograd/grad_mode.h"
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

}  // namespace

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
    return;
  }

  std::unordered_map<Node*, Tensor> grads{{grad_fn().get(), seed}};
  std::vector<Edge> keep_alive;  // edges of released nodes, alive until the pass ends
  for (Node* node : topological_order(grad_fn().get())) {
    auto found = grads.find(node);
    if (found == grads.end()) continue;  // no path carried a gradient here
    const Tensor g = std::move(found->second);
    grads.erase(found);
    RELPOS_CHECK(node->backward != nullptr, "backward",
                 "the graph through {} was already freed by an earlier backward; pass "
                 "retain_graph=true to the first call",
                 node->name);
    const std::vector<Tensor> in_grads = node->backward(g);
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
    if (!retain_graph) {  // release saved tensors and the edges below
      node->backward = nullptr;
      std::move(node->edges.begin(), node->edges.end(), std::back_inserter(keep_alive));
      node->edges.clear();
    }
  }
}

}  // namespace relpos
