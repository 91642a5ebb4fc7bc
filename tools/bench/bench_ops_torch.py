#!/usr/bin/python3
"""The PyTorch twin of relpos_bench_ops: the same cases, shape strings and timing method (two
warm-up calls, then at least 5 runs and --min-time seconds; median and min), printing the same
JSON lines with --json and a table otherwise. Run with the system interpreter (Debian's
python3-torch) for the CPU; on a GPU machine with any PyTorch built for CUDA, --device cuda
synchronizes after each call and reports torch.cuda.max_memory_allocated as the peak.
Usage: bench_ops_torch.py [--json] [--filter OP[,OP...]] [--min-time S] [--threads N]
                          [--device cpu|cuda]

Peak memory: torch 1.13 has no CPU allocator statistics (torch.cuda.max_memory_allocated is
CUDA-only) and tracemalloc sees only Python's own allocator, not ATen's. The legacy autograd
profiler with profile_memory=True does record every allocation and free of c10's CPU allocator
(each tensor buffer, as requested bytes), so one extra, untimed call is profiled and the running
sum of those events gives the peak beyond what was live before — the same quantity relpos's
allocator counter gives. Buffers that pocketfft or OpenBLAS allocate internally are not counted
on either side.
"""
import argparse
import ctypes
import json
import os
import time

import torch
import torch.nn.functional as F


DEVICE = "cpu"  # set from --device


def sync():
    if DEVICE != "cpu":
        torch.cuda.synchronize()


def normal(*shape):
    return torch.randn(*shape, dtype=torch.float32, device=DEVICE)


def make_layer_norm():
    x, w, b = normal(64, 1024, 256), normal(256), normal(256)
    return lambda: F.layer_norm(x, (256,), w, b, 1e-5)


def make_rfft():
    x = normal(64, 8192)
    # relpos returns (re, im) as a trailing dim of 2; view_as_real is the same layout, no copy.
    return lambda: torch.view_as_real(torch.fft.rfft(x))


def binary(fn, sa, sb, dtype=torch.float32):
    def make():
        a, b = normal(*sa).to(dtype), normal(*sb).to(dtype)
        return lambda: fn(a, b)
    return make


def unary(fn, shape, dtype=torch.float32):
    """dtype: the input's, drawn in f32 and rounded (bf16 cases)."""
    def make():
        x = normal(*shape).to(dtype)
        return lambda: fn(x)
    return make


def head_view(x):
    """[B, L, H*16] -> the view [B, H, L, 16] (no copy), as bench_ops.cpp's head_view."""
    return x.reshape(x.shape[0], x.shape[1], x.shape[2] // 16, 16).transpose(1, 2)


# (op, shape string, make) in the order of bench_ops.cpp; shape strings must match it exactly.
CASES = [
    ("matmul", "[1024, 1024] x [1024, 1024]", binary(torch.matmul, (1024, 1024), (1024, 1024))),
    ("bmm", "[64, 256, 64] x [64, 64, 256]", binary(torch.bmm, (64, 256, 64), (64, 64, 256))),
    ("bmm", "[16, 512, 512] x [16, 512, 512]", binary(torch.bmm, (16, 512, 512), (16, 512, 512))),
    ("softmax", "[64, 1024, 256], dim -1", unary(lambda x: torch.softmax(x, -1), (64, 1024, 256))),
    ("layer_norm", "[64, 1024, 256], weight+bias [256]", make_layer_norm),
    ("rfft", "[64, 8192]", make_rfft),
    ("cumsum", "[64, 8192], dim 1", unary(lambda x: torch.cumsum(x, 1), (64, 8192))),
    ("cumsum", "[64, 1024, 256], dim 1", unary(lambda x: torch.cumsum(x, 1), (64, 1024, 256))),
    ("copy", "[4096, 4096] clone", unary(torch.clone, (4096, 4096))),
    ("add", "[4096, 4096] + [4096, 4096]", binary(torch.add, (4096, 4096), (4096, 4096))),
    ("sum", "[4096, 4096], all dims", unary(torch.sum, (4096, 4096))),
    ("sum", "[64, 1024, 256], dim -1", unary(lambda x: torch.sum(x, -1), (64, 1024, 256))),
    ("copy", "[32, 4, 64, 16] head view, contiguous",
     unary(lambda x: head_view(x).contiguous(), (32, 64, 64))),
    ("sub", "[32, 4, 64, 16] head view - [32, 4, 64, 1]",
     binary(lambda x, c: head_view(x) - c, (32, 64, 64), (32, 4, 64, 1))),
    ("add", "[32, 4, 64, 16] head view + [32, 4, 64, 16] head view",
     binary(lambda a, b: head_view(a) + head_view(b), (32, 64, 64), (32, 64, 64))),
    ("gelu", "[4096, 4096]", unary(F.gelu, (4096, 4096))),
    ("gelu", "[4096, 4096] bf16", unary(lambda x: F.gelu(x), (4096, 4096), torch.bfloat16)),
    ("add", "[4096, 4096] + [4096, 4096] bf16",
     binary(torch.add, (4096, 4096), (4096, 4096), torch.bfloat16)),
    ("cast", "[4096, 4096] f32 to bf16", unary(lambda x: x.to(torch.bfloat16), (4096, 4096))),
    ("cast", "[4096, 4096] bf16 to f32",
     unary(lambda x: x.to(torch.float32), (4096, 4096), torch.bfloat16)),
]


def time_call(fn, min_seconds, min_runs=5):
    for _ in range(2):
        fn()
    sync()
    ms = []
    total = 0.0
    while (len(ms) < min_runs or total < min_seconds) and len(ms) < 100000:
        start = time.perf_counter()
        out = fn()
        sync()
        s = time.perf_counter() - start
        del out  # freed after the clock stops, as in bench_ops.cpp
        ms.append(s * 1e3)
        total += s
    ms.sort()
    n = len(ms)
    median = ms[n // 2] if n % 2 else 0.5 * (ms[n // 2 - 1] + ms[n // 2])
    return median, ms[0], n


def peak_bytes_of(fn):
    if DEVICE != "cpu":
        sync()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        sync()
        del out
        return torch.cuda.max_memory_allocated() - before
    # The context manager would parse the records into an EventList; only the raw, timestamped
    # allocation events are needed, so enable and disable it directly with its own config.
    config = torch.autograd.profiler_legacy.profile(profile_memory=True).config()
    torch.autograd._enable_profiler_legacy(config)
    try:
        out = fn()
        del out
    finally:
        records = torch.autograd._disable_profiler_legacy()
    # Per-thread lists, each in order; a stable sort by start time merges them.
    events = sorted((e for thread in records for e in thread if e.kind() == "memory_alloc"),
                    key=lambda e: e.start_us())
    current = peak = 0
    for e in events:
        current += e.cpu_memory_usage()
        peak = max(peak, current)
    return peak


def blas_threads():
    try:  # the libopenblas torch already loaded (dlopen returns the same handle)
        return ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads()
    except (OSError, AttributeError):
        return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--filter", default="", help="comma-separated op names")
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0") or 0))
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = p.parse_args()
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # relpos's default: fp32 GEMMs
    ops = [o for o in args.filter.split(",") if o]
    known = list(dict.fromkeys(c[0] for c in CASES))
    for o in ops:
        if o not in known:
            p.error(f"[bench] unknown op '{o}'; known: {' '.join(known)}")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    threads, bthreads = torch.get_num_threads(), blas_threads()
    torch.manual_seed(0)
    if not args.json:
        print(f"torch {torch.__version__} ops on {DEVICE}: {threads} intra-op threads, {bthreads} "
              f"OpenBLAS threads, f32")
        print(f"{'op':<11} {'shape':<36} {'median ms':>10} {'min ms':>10} {'runs':>6} "
              f"{'peak MB':>9}")
    with torch.no_grad():
        for op, shape, make in CASES:
            if ops and op not in ops:
                continue
            fn = make()
            median, best, runs = time_call(fn, args.min_time)
            peak = peak_bytes_of(fn)
            if args.json:
                print(json.dumps({"op": op, "shape": shape, "device": DEVICE,
                                  "median_ms": round(median, 4),
                                  "min_ms": round(best, 4), "runs": runs, "peak_bytes": peak,
                                  "threads": threads, "blas_threads": bthreads}), flush=True)
            else:
                print(f"{op:<11} {shape:<36} {median:10.3f} {best:10.3f} {runs:6d} "
                      f"{peak / 2**20:9.2f}", flush=True)


if __name__ == "__main__":
    main()
