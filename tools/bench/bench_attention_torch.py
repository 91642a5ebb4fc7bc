#!/usr/bin/python3
"""The PyTorch twin of relpos_bench_attention: the same variants (written with the same
algorithms in plain PyTorch; softmax and softmax_causal are PyTorch's fused
scaled_dot_product_attention, the *_naive forms the composed one), shapes and timing method (bench_ops_torch.py's: two warm-up calls,
then at least 3 runs and --min-time seconds; median and min; peak bytes of one extra call). One
timed call is the forward pass and backward from a fixed output gradient. Variants that have no
PyTorch twin here (shaw, skew, rel_xl) are relpos-only in the tables.
Usage: bench_attention_torch.py [--json] [--device cpu|cuda] [--filter NAME[,NAME...]]
           [--lengths 1024,...] [--batch 1] [--heads 8] [--dim 32] [--min-time S]
           [--max-quadratic-n N] [--threads N]
       bench_attention_torch.py --list   (the variants it has, one per line)
"""
import argparse
import json
import math
import os

import torch
import torch.nn.functional as F

import bench_ops_torch as common

EPS = 1e-6  # linear attention's denominator guard, as relpos


# PyTorch's fused attention (flash / memory-efficient kernels where it has them), from 2.0 on;
# before (Debian's 1.13) only the composed form exists, and "softmax" times that.
SDPA = getattr(torch.nn.functional, "scaled_dot_product_attention", None)


def fused_softmax_attention(q, k, v, causal):
    if SDPA is None:
        return softmax_attention(q, k, v, causal)
    return SDPA(q, k, v, is_causal=causal)


def softmax_attention(q, k, v, causal):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), -1e30)
    return torch.softmax(s, -1) @ v


def linear_attention(fq, fk, v, causal):
    if not causal:
        kv = torch.einsum("bhnf,bhnd->bhfd", fk, v)
        num = torch.einsum("bhnf,bhfd->bhnd", fq, kv)
        den = torch.einsum("bhnf,bhf->bhn", fq, fk.sum(2)) + EPS
    else:  # prefix sums of the outer products: O(N F Dv) memory
        kv = torch.cumsum(torch.einsum("bhnf,bhnd->bhnfd", fk, v), 2)
        num = torch.einsum("bhnf,bhnfd->bhnd", fq, kv)
        den = (fq * torch.cumsum(fk, 2)).sum(-1) + EPS
    return num / den.unsqueeze(-1)


def elu1(q, k):
    return F.elu(q) + 1, F.elu(k) + 1


def relu(q, k):
    return F.relu(q) + 1e-3, F.relu(k) + 1e-3


def sikf(q, k):
    # exp after one constant shift per (batch, head) for q and one for k (cancels in the ratio)
    sq = q.detach().amax(dim=(2, 3), keepdim=True)
    sk = k.detach().amax(dim=(2, 3), keepdim=True)
    return torch.exp(q - sq), torch.exp(k - sk)


def dpfp(q, k, nu=1):
    def phi(x):
        r = torch.cat([F.relu(x), F.relu(-x)], -1)
        return torch.cat([r * torch.roll(r, shifts=i, dims=-1) for i in range(1, nu + 1)], -1)
    return phi(q), phi(k)


def performer_map(m, d, device):
    w = torch.randn(m, d, device=device)

    def phi(q, k):
        c = d ** -0.25
        pq, pk = (q * c) @ w.t(), (k * c) @ w.t()
        hq = (q * c).pow(2).sum(-1, keepdim=True) / 2
        hk = (k * c).pow(2).sum(-1, keepdim=True) / 2
        fq = torch.exp(pq - hq - pq.detach().amax(-1, keepdim=True)) / math.sqrt(m)
        fk = torch.exp(pk - hk - pk.detach().amax(dim=(2, 3), keepdim=True)) / math.sqrt(m)
        return fq, fk
    return phi


def toeplitz_matvec(w, v):
    """w: [H, 2N-1] weights for distances -(N-1)..N-1, v: [B, H, N, D] -> W v, W[i, j] = w[i-j]."""
    n = v.shape[-2]
    size = 2 * n
    c = torch.cat([w[:, n - 1:], torch.zeros(w.shape[0], 1, device=v.device), w[:, :n - 1]], -1)
    fc = torch.fft.rfft(c, n=size)                         # [H, size/2+1]
    fv = torch.fft.rfft(v, n=size, dim=-2)                 # [B, H, size/2+1, D]
    return torch.fft.irfft(fc.unsqueeze(-1) * fv, n=size, dim=-2)[..., :n, :]


def make_variant(name, n, heads, dim, device):
    """Returns (fn(q, k, v) -> out, parameters, quadratic)."""
    if name in ("softmax", "softmax_causal"):
        fused = lambda q, k, v: fused_softmax_attention(q, k, v, name.endswith("causal"))
        return fused, [], SDPA is None
    if name in ("softmax_naive", "softmax_naive_causal"):
        return (lambda q, k, v: softmax_attention(q, k, v, name.endswith("causal"))), [], True
    maps = {"linear_elu1": elu1, "linear_relu": relu, "linear_sikf": sikf, "linear_dpfp": dpfp,
            "linear_elu1_causal": elu1,
            "linear_performer": performer_map(64, dim, device)}
    if name in maps:
        phi, causal = maps[name], name.endswith("causal")
        return (lambda q, k, v: linear_attention(*phi(q, k), v, causal)), [], False
    if name == "linear_sikf_fastrpb":
        w = (torch.randn(heads, 2 * n - 1, device=device) * 1e-3).requires_grad_()
        return (lambda q, k, v: linear_attention(*sikf(q, k), v, False) +
                toeplitz_matvec(w, v)), [w], False
    return None


VARIANTS = ["softmax", "softmax_causal", "softmax_naive", "softmax_naive_causal", "linear_elu1", "linear_relu", "linear_sikf",
            "linear_dpfp", "linear_performer", "linear_elu1_causal", "linear_sikf_fastrpb"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--list", action="store_true")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--filter", default="")
    p.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--max-quadratic-n", type=int, default=8192)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "0") or 0))
    p.add_argument("--precision", default="f32", choices=["f32", "bf16"],
                   help="bf16: under torch.autocast(dtype=torch.bfloat16)")
    args = p.parse_args()
    if args.list:
        print("\n".join(VARIANTS))
        return
    common.DEVICE = args.device
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    names = [x for x in args.filter.split(",") if x]
    torch.manual_seed(0)
    if not args.json:
        print(f"torch {torch.__version__} attention fwd+bwd on {args.device}: B {args.batch}, "
              f"H {args.heads}, D {args.dim}, {args.precision}, {torch.get_num_threads()} threads")
    b, h, d = args.batch, args.heads, args.dim
    for name in VARIANTS:
        if names and name not in names:
            continue
        for n in [int(x) for x in args.lengths.split(",") if x]:
            fn, params, quadratic = make_variant(name, n, h, d, args.device)
            if quadratic and n > args.max_quadratic_n:
                continue
            q = torch.randn(b, h, n, d, device=args.device) * 0.5
            k = torch.randn(b, h, n, d, device=args.device) * 0.5
            v = torch.randn(b, h, n, d, device=args.device)
            g = torch.randn(b, h, n, d, device=args.device)

            def call():
                qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
                with torch.autocast(args.device, dtype=torch.bfloat16,
                                    enabled=args.precision == "bf16"):
                    out = fn(qq, kk, vv)
                out.backward(g.to(out.dtype))
                for x in params:
                    x.grad = None
                return out.detach()
            median, best, runs = common.time_call(call, args.min_time, min_runs=3)
            peak = common.peak_bytes_of(call)
            if args.json:
                print(json.dumps({"variant": name, "n": n, "device": args.device,
                                  "median_ms": round(median, 4), "min_ms": round(best, 4),
                                  "runs": runs, "peak_bytes": peak}), flush=True)
            else:
                print(f"{name:<22} {n:7d} {median:11.2f} {best:10.2f} {runs:6d} "
                      f"{peak / 2**20:10.1f}", flush=True)


if __name__ == "__main__":
    main()
