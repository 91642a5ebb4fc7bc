// The emulated attention kernels on bf16 elements (emulated_attention.h).
#include "emulated_attention_kernels.h"

RELPOS_EMULATED_ATTENTION(relpos::bf16);
