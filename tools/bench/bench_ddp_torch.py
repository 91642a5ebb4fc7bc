#!/usr/bin/python3
"""The PyTorch peer of tools/bench/run_distributed_bench.sh: DistributedDataParallel training
steps of the same models on --procs CPU processes (gloo, one thread each, buckets of 4 MB as
relpos's), each process taking its contiguous share of a global batch of --batch rows; prints
rank 0's median seconds per update as JSON.
Usage: bench_ddp_torch.py --model demo|mnist|lm --batch B --procs N [--steps S] [--warmup W]

Models: `demo` and `mnist` are bench_train_step_torch.py's classifiers (the demo and the
Table-2 model, AdamW), `lm` is bench_lm_step_torch.py's Transformer-XL at the demo LM's sizes
(3 layers, d 128, 4 heads, inner 512, 85 characters, 64 tokens after a memory of 64; Adam,
clipping at 0.25).
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_lm_step_torch as lm_bench  # noqa: E402
import bench_train_step_torch as cls_bench  # noqa: E402

LM = SimpleNamespace(layers=3, d_model=128, heads=4, d_inner=512, vocab=85, tgt_len=64,
                     mem_len=64, dropout=0.1, clip=0.25)


def shard(rows, rank, ranks):
    """relpos's rule (datasets/shard.h): contiguous, the first rows % ranks take one more."""
    base, extra = divmod(rows, ranks)
    begin = rank * base + min(rank, extra)
    return begin, begin + base + (1 if rank < extra else 0)


def worker(rank, a, port, out):
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=a.procs)
    torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    begin, end = shard(a.batch, rank, a.procs)
    if a.model == "lm":
        model = lm_bench.TransformerXL(LM).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=2.5e-4, foreach=True)
        tokens = torch.randint(LM.vocab, (a.batch, LM.tgt_len))[begin:end]
        targets = torch.randint(LM.vocab, (a.batch, LM.tgt_len))[begin:end].reshape(-1)
        with torch.no_grad():
            mems = [torch.randn(end - begin, LM.mem_len, LM.d_model) for _ in range(LM.layers)]
        inputs = (tokens, mems)
    else:
        cfg = cls_bench.MODELS[a.model]
        model = cls_bench.Classifier(cfg).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"],
                                      weight_decay=cfg["weight_decay"])
        tokens, targets = (t[begin:end] for t in cls_bench.make_batch(cfg, a.batch, "cpu"))
        inputs = (tokens,)
    ddp = DistributedDataParallel(model, bucket_cap_mb=4) if a.procs > 1 else model

    def step():
        optimizer.zero_grad(set_to_none=True)
        output = ddp(*inputs)
        logits = output[0] if a.model == "lm" else output
        # The global batch's mean: this rank's sum over the global count (DDP averages over
        # ranks, so scale by the ranks back to a sum).
        loss = F.cross_entropy(logits.reshape(targets.numel(), -1), targets, reduction="sum")
        loss = loss * a.procs / (a.batch * (LM.tgt_len if a.model == "lm" else 1))
        loss.backward()
        if a.model == "lm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), LM.clip)
        optimizer.step()

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    if rank == 0:
        out.put({"model": a.model, "batch": a.batch, "procs": a.procs,
                 "median_s": statistics.median(times), "steps": a.steps,
                 "torch": torch.__version__})
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=["demo", "mnist", "lm"])
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    if a.batch < a.procs or a.procs < 1 or a.steps < 1 or a.warmup < 0:
        p.error("[bench] need --batch >= --procs >= 1, --steps >= 1, --warmup >= 0")
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = mp.get_context("spawn")
    out = context.SimpleQueue()
    mp.start_processes(worker, args=(a, port, out), nprocs=a.procs, start_method="spawn")
    print(json.dumps(out.get()), flush=True)


if __name__ == "__main__":
    main()
