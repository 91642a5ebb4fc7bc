// The CPU thread count follows the cores other processes leave free. OpenMP regions split their
// work statically over the threads, so when another busy process holds a core, every region waits
// for the thread that shares it: with one `yes` on a 2-core machine the demo training step went
// from 18 ms to 88 ms at 2 threads, but ran in 24 ms on 1. Between steps, the trainer (and the
// step benchmark) calls fit_threads_to_free_cores(), which gives OpenMP (relpos's kernels, and
// the GEMM blocks core/cpu/matmul.cpp hands to OpenBLAS) min(requested, cores - runnable
// threads of other processes) threads, at least 1.
#pragma once

namespace relpos {

// Looks at the machine at most every 25 ms (/proc/stat's runnable count minus this process's
// runnable threads; the least of the last 5 looks, so a passing task changes nothing) and sets
// omp_set_num_threads. The requested count is OpenMP's at the first call, or whatever someone
// else set since the last call. Does nothing where /proc is not readable. Results do not depend
// on the thread count (the CPU kernels split work by shape, never by threads), so a run under
// load gives the same bits as a quiet one.
void fit_threads_to_free_cores();

// The requested thread count (see above), or 0 before the first call.
int requested_cpu_threads();

}  // namespace relpos
