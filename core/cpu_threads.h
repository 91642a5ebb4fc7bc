// The CPU thread count follows the cores other processes leave free. OpenMP regions split their
// work statically over the threads, so when another busy process holds a core, every region waits
// for the thread that shares it: with one `yes` on a 2-core machine the demo training step went
// from 18 ms to 88 ms at 2 threads, but ran in 24 ms on 1. Between steps, the trainer (and the
// step benchmark) calls fit_threads_to_free_cores(), which gives OpenMP (and through it
// OpenBLAS) min(requested, cores - runnable threads of other processes) threads, at least 1.
#pragma once

namespace relpos {

// Looks at the machine at most every 25 ms (/proc/stat's runnable count minus this process's
// runnable threads; the least of the last 5 looks, so a passing task changes nothing) and sets
// omp_set_num_threads. `requested` is OpenMP's thread count at the first call. Does nothing
// where /proc is not readable.
void fit_threads_to_free_cores();

// The thread count the first call found (what the user or the launcher asked for), or 0 before it.
int requested_cpu_threads();

}  // namespace relpos
