#!/usr/bin/python3
"""The PyTorch peer of a relpos training step: forward, cross-entropy, backward and one AdamW
update of a whole classifier, timed over --steps steps after --warmup untimed ones.
Usage: bench_train_step_torch.py [--model demo|mnist] [--batch B] [--steps N] [--warmup W]
           [--threads T] [--device cpu|cuda] [--json]

Models (written in plain torch as a strong PyTorch user writes them: one fused q/k/v projection,
the two axes of FastRPB 2D in one stacked rfft/irfft pair on square grids, AdamW(foreach=True);
the same parameter count and math as relpos's; the configs they stand for):
  demo   configs/demo/mnist_sikf_fastrpb2d.yaml: 7x7 pooled MNIST pixels (value / 255 through
         Linear(1, 64)), a learned CLS vector (zero init) prepended, learned positions over 50
         rows, 2 pre-LN blocks (4 heads, MLP 128, GELU), final LayerNorm, mean over all 50 rows
         -> Dense(128) -> ReLU -> Dense(10). Attention: linear + sikf, plus FastRPB 2D on the 7x7 grid.
  mnist  the Table 2 model, configs/mnist/linear_sikf_fastrpb2d.yaml: [CLS] p1 .. p784 [SEP]
         as token ids (Embedding 258 x 256, N(0, 0.02)), learned positions over 786 rows,
         embedding LayerNorm, 8 post-LN blocks (8 heads, FFN 3072 GELU, q/k/v/out with bias),
         pooler Dense(256) + tanh on [CLS] -> Dense(10). Linear + sikf, FastRPB 2D on 28x28.
The parts follow relpos's sources: layers/models/encoder.cpp (block order, dropout places,
CLS and positions), layers/attention/multi_head.cpp (xavier-uniform projections, FastRPB W·V
added before the output projection), linear.cpp (bidirectional phi(K)^T V state, eps 1e-6),
feature_maps/sikf.cpp with stabilizer.cpp (the default `max` shift: each query minus its own
max, keys minus one max per (batch, head), no gradient through the shifts), fastrpb2d.cpp and
toeplitz.cpp (weights [H, 2N - 1] for N = max(rows, cols), the central slice per axis, the
circulant of the smallest 2^a 3^b 5^c >= 2n - 1 and one rfft/irfft pair per axis; special
tokens get no bias rows). Dropout is active (train mode) as in a real step.

Timing: each step ends with torch.cuda.synchronize() on a GPU; median, p10 and p90 of the timed
steps in ms. Peak memory ("peak_kind"): on cuda torch.cuda.max_memory_allocated() over the timed
steps (parameters, AdamW state, activations and gradients: everything live); on cpu the growth
of the process's maximum resident set size (resource.getrusage ru_maxrss) from before the model
is built to after the last step, an upper-level view that also counts allocator caching and
library buffers (torch 1.13 keeps no CPU allocator statistics).
"""
import argparse
import json
import math
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-6  # linear attention's denominator guard (linear.cpp)

# model -> sizes; the values the configs above give.
MODELS = {
    "demo": dict(input="pixels", cls="vector", pooling="mean", norm="pre", head="mlp", layers=2, heads=4, dim=64,
                 mlp=128, grid=(7, 7), bias=False, lr=3e-3, dropout=0.0, weight_decay=0.01,
                 default_batch=32),
    "mnist": dict(input="tokens", cls="token", pooling="cls", norm="post", head="tanh", layers=8, heads=8,
                  dim=256, mlp=3072, grid=(28, 28), bias=True, dropout=0.1, lr=1.45e-4,
                  weight_decay=0.01, default_batch=8),
}
VOCAB = 256  # pixel values 0-255; [CLS] = 256, [SEP] = 257 with cls "token"
CLASSES = 10


def fft_size(n):
    """The smallest 2^a 3^b 5^c >= 2n - 1 (toeplitz_fft_size)."""
    m = 2 * n - 1
    while True:
        rest = m
        for p in (2, 3, 5):
            while rest % p == 0:
                rest //= p
        if rest == 1:
            return m
        m += 1


def toeplitz_matvec(w, x):
    """w: [H, 2n - 1] (column k <-> distance i - j = k - (n - 1)), x: [B, H, n, D] -> W·x
    [B, H, n, D], W[i, j] = w_(i-j), by one zero-padded circulant product (toeplitz.cpp)."""
    heads, n = x.shape[1], x.shape[2]
    m = fft_size(n)
    # First column of the circulant: w_0 .. w_(n-1), zeros, then w_-(n-1) .. w_-1.
    c = torch.cat([F.pad(w[:, n - 1:], (0, m - n - (n - 1))), w[:, :n - 1]], 1)  # [H, m]
    cf = torch.fft.rfft(c, n=m).view(1, heads, 1, -1)                            # [1, H, 1, F]
    xf = torch.fft.rfft(x.transpose(2, 3), n=m)                                  # [B, H, D, F]
    y = torch.fft.irfft(xf * cf, n=m)[..., :n]                                   # [B, H, D, n]
    return y.transpose(2, 3)                                                     # [B, H, n, D]


class FastRpb2d(nn.Module):
    """W2d·V on a rows x cols grid: t(r - r')·rowsum(r') + t(c - c')·colsum(c') (fastrpb2d.cpp),
    parameterization full, special tokens (front, back) without bias rows."""

    def __init__(self, heads, grid, front, back):
        super().__init__()
        self.rows, self.cols = grid
        self.front, self.back = front, back
        n = max(grid)
        dist = torch.arange(-(n - 1), n, dtype=torch.float64).abs().view(1, -1)
        slope, offset = torch.rand(heads, 1, dtype=torch.float64), torch.randn(heads, 1,
                                                                              dtype=torch.float64)
        self.weight = nn.Parameter((dist * slope * 1e-5 + offset * 1e-6).float())  # [H, 2n - 1]
        self.n = n

    def central(self, n):
        center = self.n - 1
        return self.weight[:, center - (n - 1):center + n]  # [H, 2n - 1]

    def forward(self, v):
        b, h, length, d = v.shape
        content = v[:, :, self.front:length - self.back]         # [B, H, rows·cols, D]
        image = content.reshape(b, h, self.rows, self.cols, d)   # [B, H, rows, cols, D]
        if self.rows == self.cols:  # both axes in one stacked rfft/irfft pair
            w = self.central(self.rows)
            both = toeplitz_matvec(w.repeat(2, 1), torch.cat([image.sum(3), image.sum(2)], 1))
            by_row, by_col = both.split(h, 1)                    # each [B, H, n, D]
        else:
            by_row = toeplitz_matvec(self.central(self.rows), image.sum(3))  # [B, H, rows, D]
            by_col = toeplitz_matvec(self.central(self.cols), image.sum(2))  # [B, H, cols, D]
        y = (by_row.unsqueeze(3) + by_col.unsqueeze(2)).reshape(b, h, self.rows * self.cols, d)
        return F.pad(y, (0, 0, self.front, self.back))           # [B, H, L, D]


def sikf(q, k):
    """exp after the `max` shifts (sikf.cpp, stabilizer.cpp); no padding keys here."""
    q_shift = q.detach().amax(3, keepdim=True)       # [B, H, Lq, 1]
    k_shift = k.detach().amax((2, 3), keepdim=True)  # [B, H, 1, 1]
    return torch.exp(q - q_shift), torch.exp(k - k_shift)


def linear_attention(phi_q, phi_k, v):
    """Bidirectional kernelized attention (linear.cpp, the `linear` algorithm)."""
    kv = phi_k.transpose(2, 3) @ v                   # [B, H, F, Dv]
    z = phi_k.sum(2, keepdim=True)                   # [B, H, 1, F]
    num = phi_q @ kv                                 # [B, H, Lq, Dv]
    den = phi_q @ z.transpose(2, 3)                  # [B, H, Lq, 1]
    return num / (den + EPS)


def xavier_linear(fan_in, fan_out, bias):
    layer = nn.Linear(fan_in, fan_out, bias=bias)
    nn.init.xavier_uniform_(layer.weight)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


class MultiHeadAttention(nn.Module):
    def __init__(self, dim, heads, bias, grid, front, back):
        super().__init__()
        self.heads = heads
        # One fused q/k/v projection (one GEMM), each third initialized as relpos's own one.
        self.qkv_proj = nn.Linear(dim, 3 * dim, bias=bias)
        for part in self.qkv_proj.weight.data.chunk(3, 0):
            nn.init.xavier_uniform_(part)
        if bias:
            nn.init.zeros_(self.qkv_proj.bias)
        self.out_proj = xavier_linear(dim, dim, bias)
        self.positional = FastRpb2d(heads, grid, front, back)

    def forward(self, x):
        b, length, dim = x.shape
        qkv = self.qkv_proj(x).view(b, length, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, L, D]
        y = linear_attention(*sikf(q, k), v) + self.positional(v)  # before the output projection
        return self.out_proj(y.transpose(1, 2).reshape(b, length, dim))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, dropout):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.dropout(F.gelu(self.fc1(x))))


class EncoderBlock(nn.Module):
    def __init__(self, cfg, front, back):
        super().__init__()
        self.pre = cfg["norm"] == "pre"
        self.ln1, self.ln2 = nn.LayerNorm(cfg["dim"]), nn.LayerNorm(cfg["dim"])
        self.attn = MultiHeadAttention(cfg["dim"], cfg["heads"], cfg["bias"], cfg["grid"], front,
                                       back)
        self.mlp = FeedForward(cfg["dim"], cfg["mlp"], cfg["dropout"])
        self.dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x):
        if self.pre:
            h = x + self.dropout(self.attn(self.ln1(x)))
            return h + self.dropout(self.mlp(self.ln2(h)))
        h = self.ln1(x + self.dropout(self.attn(x)))
        return self.ln2(h + self.dropout(self.mlp(h)))


class Classifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["dim"]
        front, back = (1, 0) if cfg["cls"] == "vector" else (1, 1)
        length = cfg["grid"][0] * cfg["grid"][1] + front + back
        if cfg["cls"] == "vector":
            self.cls = nn.Parameter(torch.zeros(d))
        if cfg["input"] == "pixels":
            self.pixel_proj = nn.Linear(1, d)
        else:
            self.embedding = nn.Embedding(VOCAB + 2, d)
            nn.init.normal_(self.embedding.weight, 0.0, 0.02)
        self.position = nn.Parameter(torch.randn(length, d) * 0.02)
        self.embedding_norm = nn.LayerNorm(d) if cfg["norm"] == "post" else None
        self.dropout = nn.Dropout(cfg["dropout"])
        self.layers = nn.ModuleList(EncoderBlock(cfg, front, back) for _ in range(cfg["layers"]))
        self.norm = nn.LayerNorm(d) if cfg["norm"] == "pre" else None
        if cfg["head"] == "mlp":
            self.head = nn.Sequential(nn.Linear(d, cfg["mlp"]), nn.ReLU(),
                                      nn.Linear(cfg["mlp"], CLASSES))
        else:
            self.pooler, self.classifier = nn.Linear(d, d), nn.Linear(d, CLASSES)

    def forward(self, tokens):
        # tokens: [B, L] (pixel values, with [CLS] ... [SEP] ids for cls "token")
        if self.cfg["input"] == "pixels":
            x = self.pixel_proj((tokens.float() / 255.0).unsqueeze(2))  # [B, L, d]
        else:
            x = self.embedding(tokens)                                   # [B, L, d]
        if self.cfg["cls"] == "vector":
            x = torch.cat([self.cls.view(1, 1, -1).expand(x.shape[0], 1, -1), x], 1)
        x = x + self.position[:x.shape[1]]
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        x = self.dropout(x)
        for layer in self.layers:
            x = layer(x)
        if self.norm is not None:
            x = self.norm(x)
        pooled = x.mean(1) if self.cfg["pooling"] == "mean" else x[:, 0]  # [B, d]
        if self.cfg["head"] == "mlp":
            return self.head(pooled)
        return self.classifier(torch.tanh(self.pooler(pooled)))


def make_batch(cfg, batch, device):
    pixels = torch.randint(0, 256, (batch, cfg["grid"][0] * cfg["grid"][1]), device=device)
    if cfg["cls"] == "token":
        cls = torch.full((batch, 1), VOCAB, device=device)
        sep = torch.full((batch, 1), VOCAB + 1, device=device)
        pixels = torch.cat([cls, pixels, sep], 1)  # [B, 786]
    labels = torch.randint(0, CLASSES, (batch,), device=device)
    return pixels, labels


def percentile(sorted_ms, p):
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_ms) == 1:
        return sorted_ms[0]
    pos = (len(sorted_ms) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="demo", choices=sorted(MODELS))
    p.add_argument("--batch", type=int, default=0, help="0: 32 for demo, 8 for mnist")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=0, help="0: torch's default")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--precision", default="f32", choices=["f32", "bf16"],
                   help="bf16: forward and loss under torch.autocast(dtype=torch.bfloat16)")
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch < 0:
        p.error("[bench] --steps must be >= 1, --warmup and --batch >= 0")
    if args.device == "cuda":
        if not torch.cuda.is_available():
            p.error("[bench] --device cuda: this torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False  # relpos's default: fp32 GEMMs
        torch.backends.cudnn.allow_tf32 = False
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    cfg = MODELS[args.model]
    batch = args.batch or cfg["default_batch"]
    device = torch.device(args.device)
    torch.manual_seed(0)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    model = Classifier(cfg).to(device).train()
    params = sum(t.numel() for t in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"],
                                  weight_decay=cfg["weight_decay"], foreach=True)
    tokens, labels = make_batch(cfg, batch, device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()
        return loss.detach()

    for _ in range(args.warmup):
        step()
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    if device.type == "cuda":
        peak, peak_kind = torch.cuda.max_memory_allocated(), "cuda_max_memory_allocated"
    else:
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak, peak_kind = (rss_after - rss_before) * 1024, "cpu_max_rss_delta"
    ms = sorted(times)
    result = {"model": args.model, "batch": batch, "median_ms": round(statistics.median(ms), 3),
              "p10_ms": round(percentile(ms, 10), 3), "p90_ms": round(percentile(ms, 90), 3),
              "peak_bytes": int(peak), "params": params, "peak_kind": peak_kind,
              "device": args.device, "threads": torch.get_num_threads(), "steps": args.steps,
              "warmup": args.warmup, "torch": torch.__version__}
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        print(f"torch {torch.__version__} training step ({args.model}, batch {batch}) on "
              f"{args.device}, {result['threads']} threads: median {result['median_ms']:.2f} ms "
              f"(p10 {result['p10_ms']:.2f}, p90 {result['p90_ms']:.2f}) over {args.steps} steps; "
              f"{params:,} parameters; peak {peak / 2**20:.1f} MiB ({peak_kind}); "
              f"last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
