// The emulated attention kernels on float elements (emulated_attention.h).
#include "emulated_attention_kernels.h"

RELPOS_EMULATED_ATTENTION(float);
