#include "autograd/sum_to.h"

#include "core/ops.h"

namespace relpos {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int lead = grad.dim() - static_cast<int>(shape.size());
  RELPOS_CHECK(lead >= 0, "sum_to", "gradient {} has fewer dims than the input shape {}",
               grad.str(), shape_str(shape));
  std::vector<int64_t> dims;
  for (int d = 0; d < grad.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reduced.reshape(shape);
}

}  // namespace relpos
