#!/usr/bin/python3
"""The PyTorch peer of a relpos language-model training step: forward over a segment after a full
memory, cross-entropy over every position, backward, gradient clipping and one Adam update of a
Transformer-XL, timed over --steps steps after --warmup untimed ones.
Usage: bench_lm_step_torch.py --layers N --d-model D --heads H --d-inner F --vocab V
           --tgt-len L --mem-len M [--dropout P] [--clip C] [--batch B] [--steps N] [--warmup W]
           [--threads T] [--device cpu|cuda] [--json]

The model is Transformer-XL as a strong PyTorch user writes it after the reference
MemTransformerLM (attn_type 0, post-LN): the embedding scaled by sqrt(d_model), one fused qkv
projection per layer without bias, the relative terms (q + u) k^T and rel_shift((q + v) r^T) with
r = r_net(sinusoids of the distances klen - 1 .. 0), u and v shared by the layers, a ReLU FFN
with biases, LayerNorm after each residual, dropout where relpos has it (embedding, attention
output, FFN inner and output, before the output layer; none on the distance embedding), the
output layer tied to the embedding plus a bias. The sizes are relpos's (tools/bench/
run_lm_step_bench.sh passes them from the config), so both count the same parameters.
Peak memory is measured as in bench_train_step_torch.py ("peak_kind").
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


def rel_shift(x):
    # x: [B, H, Lq, Lk] with column c the distance Lk - 1 - c -> row i shifted so that column j
    # holds distance (Lk - Lq + i) - j (Transformer-XL appendix B).
    b, h, q, k = x.shape
    padded = F.pad(x, (1, 0)).view(b, h, k + 1, q)
    return padded[:, :, 1:].reshape(b, h, q, k)


class Layer(nn.Module):
    def __init__(self, d, heads, inner, dropout):
        super().__init__()
        self.heads, self.d_head = heads, d // heads
        self.qkv_net = nn.Linear(d, 3 * d, bias=False)
        self.r_net = nn.Linear(d, d, bias=False)
        self.o_net = nn.Linear(d, d, bias=False)
        self.ln1 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, inner), nn.ReLU(inplace=True), nn.Dropout(dropout),
                                nn.Linear(inner, d), nn.Dropout(dropout))
        self.ln2 = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, h, mem, pos, u, v, mask):
        # h: [B, L, d], mem: [B, M, d], pos: [M + L, d] sinusoids
        b, q_len, d = h.shape
        cat = torch.cat([mem, h], 1)
        k_len = cat.shape[1]
        heads = self.qkv_net(cat).view(b, k_len, 3, self.heads, self.d_head)
        q = heads[:, -q_len:, 0].transpose(1, 2)  # [B, H, L, Dh]
        k = heads[:, :, 1].transpose(1, 2)        # [B, H, K, Dh]
        val = heads[:, :, 2].transpose(1, 2)
        r = self.r_net(pos).view(k_len, self.heads, self.d_head).transpose(0, 1)  # [H, K, Dh]
        ac = torch.matmul(q + u[:, None], k.transpose(-1, -2))
        bd = rel_shift(torch.matmul(q + v[:, None], r.transpose(-1, -2)))
        scores = (ac + bd).mul_(1 / math.sqrt(self.d_head)).masked_fill_(mask, float("-inf"))
        att = torch.matmul(scores.softmax(-1), val).transpose(1, 2).reshape(b, q_len, d)
        h = self.ln1(h + self.drop(self.o_net(att)))
        return self.ln2(h + self.ff(h))


class TransformerXL(nn.Module):
    def __init__(self, a):
        super().__init__()
        d = a.d_model
        self.emb = nn.Embedding(a.vocab, d)
        self.scale = math.sqrt(d)
        self.r_w_bias = nn.Parameter(torch.randn(a.heads, d // a.heads) * 0.02)
        self.r_r_bias = nn.Parameter(torch.randn(a.heads, d // a.heads) * 0.02)
        self.layers = nn.ModuleList(Layer(d, a.heads, a.d_inner, a.dropout)
                                    for _ in range(a.layers))
        self.out_bias = nn.Parameter(torch.zeros(a.vocab))
        self.drop = nn.Dropout(a.dropout)
        self.register_buffer("inv_freq", 1 / 10000 ** (torch.arange(0, d, 2.0) / d))

    def forward(self, tokens, mems):
        b, q_len = tokens.shape
        m = mems[0].shape[1]
        k_len = m + q_len
        dist = torch.arange(k_len - 1, -1, -1.0, device=tokens.device)
        angles = dist[:, None] * self.inv_freq[None]
        pos = torch.cat([angles.sin(), angles.cos()], -1)
        mask = torch.ones(q_len, k_len, dtype=torch.bool, device=tokens.device).triu(1 + m)
        h = self.drop(self.emb(tokens) * self.scale)
        new_mems = []
        for layer, mem in zip(self.layers, mems):
            new_mems.append(torch.cat([mem, h], 1)[:, -m:].detach())
            h = layer(h, mem, pos, self.r_w_bias, self.r_r_bias, mask)
        return F.linear(self.drop(h), self.emb.weight, self.out_bias), new_mems


def percentile(sorted_values, q):
    k = (len(sorted_values) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--layers", "--d-model", "--heads", "--d-inner", "--vocab", "--tgt-len",
                 "--mem-len"):
        p.add_argument(name, type=int, required=True)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=0, help="0: torch's default")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--precision", default="f32", choices=["f32", "bf16"],
                   help="bf16: forward and loss under torch.autocast(dtype=torch.bfloat16)")
    a = p.parse_args()
    if a.device == "cuda":
        if not torch.cuda.is_available():
            p.error("[bench] --device cuda: this torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False  # relpos's default: fp32 GEMMs
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    torch.manual_seed(0)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    model = TransformerXL(a).to(device).train()
    params = sum(t.numel() for t in model.parameters())
    optimizer = torch.optim.Adam(model.parameters(), lr=2.5e-4, foreach=True)
    tokens = torch.randint(a.vocab, (a.batch, a.tgt_len), device=device)
    targets = torch.randint(a.vocab, (a.batch * a.tgt_len,), device=device)
    with torch.no_grad():  # a full memory, as every segment after the first has
        mems = [torch.randn(a.batch, a.mem_len, a.d_model, device=device)
                for _ in range(a.layers)]

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            logits, _ = model(tokens, mems)
            loss = F.cross_entropy(logits.view(-1, a.vocab), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        optimizer.step()
        return loss.detach()

    for _ in range(a.warmup):
        step()
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    if device.type == "cuda":
        peak, peak_kind = torch.cuda.max_memory_allocated(), "cuda_max_memory_allocated"
    else:
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak, peak_kind = (rss_after - rss_before) * 1024, "cpu_max_rss_delta"
    ms = sorted(times)
    result = {"batch": a.batch, "median_ms": round(statistics.median(ms), 3),
              "p10_ms": round(percentile(ms, 10), 3), "p90_ms": round(percentile(ms, 90), 3),
              "peak_bytes": int(peak), "params": params, "peak_kind": peak_kind,
              "device": a.device, "threads": torch.get_num_threads(), "steps": a.steps,
              "torch": torch.__version__}
    if a.json:
        print(json.dumps(result), flush=True)
    else:
        print(f"torch {torch.__version__} LM step on {a.device}, {result['threads']} threads: "
              f"median {result['median_ms']:.2f} ms over {a.steps} steps; {params:,} parameters")


if __name__ == "__main__":
    main()
