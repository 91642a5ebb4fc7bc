// Reduces a broadcast gradient back to an input's shape: sums the leading dims the input lacks
// and the dims where the input has size 1. The one place broadcasting is undone (STYLE.md).
#pragma once

#include "core/tensor.h"

namespace relpos {

Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace relpos
