// Constant shifts that the exponential feature maps (sikf, performer) subtract before exp, so it
// cannot overflow. They carry no gradient; the maps report them (Features in feature_map.h) and
// linear attention undoes them where they do not cancel. Padding keys never set them. The key
// shift is one per (b, h) over all real keys, in causal attention too: a later key moves only the
// rounding of earlier outputs, unless the keys spread by more than the dtype's exp range (~87 in
// f32), where the earlier keys' features underflow.
#pragma once

#include "core/tensor.h"

namespace relpos {

// key_mask [B, Lk] u8 (1 = real key) -> u8 [B, 1, Lk, 1], 1 at padding keys; undefined when
// key_mask is (no padding).
Tensor padding_rows(const Tensor& key_mask);

// x: [B, H, Lk, F] -> [B, H, 1, 1]: the max over real keys (padding from padding_rows, may be
// undefined) and features. A row without any real key gets the max over all its keys instead, so
// the shift is always finite.
Tensor max_over_real_keys(const Tensor& x, const Tensor& padding);

}  // namespace relpos
