// The emulated attention kernels on double elements (emulated_attention.h).
#include "emulated_attention_kernels.h"

RELPOS_EMULATED_ATTENTION(double);
