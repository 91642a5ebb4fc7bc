// Stands in for the toolkit's cuda_bf16.h in tests/cuda_emulation: the device's bfloat16 is
// relpos's (same bits, same rounding).
#pragma once

#include "core/bf16.h"

using __nv_bfloat16 = relpos::bf16;
