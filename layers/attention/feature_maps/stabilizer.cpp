// Shifts for the exponential feature maps (layers/attention/feature_maps/stabilizer.h).
#include "layers/attention/feature_maps/stabilizer.h"

#include "core/ops.h"

namespace relpos {

Tensor padding_rows(const Tensor& key_mask) {
  if (!key_mask.defined()) return {};
  const int64_t batch = key_mask.size(0), k_len = key_mask.size(1);
  return eq(key_mask, zeros({1}, DType::u8, key_mask.device())).reshape({batch, 1, k_len, 1});
}

Tensor max_over_real_keys(const Tensor& x, const Tensor& padding) {
  if (!padding.defined()) return max(x, {2, 3}, true);  // [B, H, 1, 1]
  // Padding keys take the smallest entry of their (b, h): never above a real key's maximum, and
  // the maximum itself when every key is padding.
  const Tensor smallest = neg(max(neg(x), {2, 3}, true));  // [B, H, 1, 1]
  return max(where(padding, smallest, x), {2, 3}, true);   // [B, H, 1, 1]
}

}  // namespace relpos
