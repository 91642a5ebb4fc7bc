// index_select, embedding, gather, scatter_add, index_add. Each backward is the adjoint indexing
// op: a selection's gradient is accumulated (index_add / scatter_add) into zeros, so repeated
// indices sum; an accumulation's gradient to its source is the matching selection.
#include "autograd/functions.h"

namespace relpos {

Var index_select(const Var& x, int64_t dim, const Tensor& index) {
  return make_result("index_select", index_select(x.value(), dim, index), {x},
                     [index, dim, shape = x.shape()](const Tensor& g) {
                       const Tensor zero = zeros(shape, g.dtype(), g.device());
                       return std::vector<Tensor>{index_add(zero, dim, index, g)};
                     });
}

Var embedding(const Var& weight, const Tensor& ids) {
  // weight: [V, D], ids: [*S] -> out: [*S, D]; dweight[v] = sum of the grad rows whose id is v.
  return make_result(
      "embedding", embedding(weight.value(), ids), {weight},
      [ids, shape = weight.shape()](const Tensor& g) {
        const Tensor rows = g.reshape({ids.numel(), shape[1]});  // [S, D]
        const Tensor zero = zeros(shape, g.dtype(), g.device());
        return std::vector<Tensor>{index_add(zero, 0, ids.reshape({ids.numel()}), rows)};
      });
}

Var gather(const Var& x, int64_t dim, const Tensor& index) {
  return make_result("gather", gather(x.value(), dim, index), {x},
                     [index, dim, shape = x.shape()](const Tensor& g) {
                       const Tensor zero = zeros(shape, g.dtype(), g.device());
                       return std::vector<Tensor>{scatter_add(zero, dim, index, g)};
                     });
}

Var scatter_add(const Var& x, int64_t dim, const Tensor& index, const Var& src) {
  // out = x + scatter(src): dx = g, dsrc = g read back at the scattered positions.
  const bool gsrc = src.requires_grad();
  return make_result("scatter_add", scatter_add(x.value(), dim, index, src.value()), {x, src},
                     [index, dim, gsrc](const Tensor& g) {
                       return std::vector<Tensor>{g, gsrc ? gather(g, dim, index) : Tensor()};
                     });
}

Var index_add(const Var& x, int64_t dim, const Tensor& index, const Var& src) {
  // out = x + (src rows added at index): dx = g, dsrc = the rows of g at index.
  const bool gsrc = src.requires_grad();
  return make_result("index_add", index_add(x.value(), dim, index, src.value()), {x, src},
                     [index, dim, gsrc](const Tensor& g) {
                       return std::vector<Tensor>{g, gsrc ? index_select(g, dim, index) : Tensor()};
                     });
}

}  // namespace relpos
