#!/usr/bin/python3
"""An independent float64 reference of relpos's `sequence_classifier` and `dual_encoder` forward
passes.

    /usr/bin/python3 tools/reference_classifier.py CHECKPOINT PREDICTIONS.h5 [--data-dir DIR]

CHECKPOINT is a relpos checkpoint (params/<name>, the resolved config in the attribute `config`);
PREDICTIONS.h5 is what `relpos eval CHECKPOINT --split test --predictions PREDICTIONS.h5` wrote
(datasets `logits` [n, classes] and `labels` [n], in dataset order). The script reads the test
split from the raw files (MNIST-format IDX, ListOps TSV, AAN TSV), runs the model on every
example ALONE (no batch, no padding) in numpy float64 from the formulas of the documentation and
the papers, and compares. Exit status: 0 within tolerance, 1 not, 2 a config it does not
implement (one line naming the key).

Written from README.md, configs/README.md, docs/*.md, EXPERIMENTS.md, DESIGN.md and the seed
papers; where they leave a detail open, the choice is marked "GAP:" below and is what relpos's
code does (read only for those details). The encoder follows docs/architecture.md ("layers:
models"): embedding, CLS, absolute positions, blocks, final norm, pooling, head.

Implemented: attention softmax (fused or not: same formula) and linear with feature maps elu1,
relu, sikf, dpfp, performer (its projection from the checkpoint's buffers), cosformer;
positional none, fastrpb, fastrpb2d, shaw, skew, sinspe and convspe (1-D and on a grid; their
evaluation noise from the Philox stream, tools/reference_spe.py), shared across layers or not;
input tokens,
pixels, patches; cls vector / token / none; pooling cls / mean; head mlp / tanh; norm pre / post
(embedding_norm); positions learned / learned2d / sinusoidal / none; tied_blocks; index_first
(equal to the standard block by the README); head_combiner concat / stacked; dual_encoder with
combine concat / features and interaction none / cross_attention. Datasets mnist, fashion-mnist
(IDX), listops (TSV), aan (document pairs), test split. Not implemented (exit 2): rel_xl,
fastrpb(2d) in a cross attention, other model types and datasets, train.precision bf16.
"""
import argparse
import gzip
import math
import os
import struct
import sys

import h5py
import numpy as np
import yaml

from reference_spe import spe_rewrite

try:
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover
    _erf = np.vectorize(math.erf)


class Unsupported(Exception):
    """A config key or value this reference does not implement (exit 2)."""


# --------------------------------------------------------------------------------------------
# Checkpoint and data
# --------------------------------------------------------------------------------------------

def load_checkpoint(path):
    """-> (params {name: f64 array}, buffers {name: f64 array}, config dict)."""
    with h5py.File(path, "r") as f:
        params = {}
        f["params"].visititems(
            lambda n, o: params.__setitem__(n, np.asarray(o[()], dtype=np.float64))
            if isinstance(o, h5py.Dataset) else None)
        buffers = {}
        if "buffers" in f:
            f["buffers"].visititems(
                lambda n, o: buffers.__setitem__(n, np.asarray(o[()], dtype=np.float64))
                if isinstance(o, h5py.Dataset) else None)
        text = f.attrs["config"]
        config = yaml.safe_load(text.decode() if isinstance(text, bytes) else text)
    return params, buffers, config


def _open(path):
    if os.path.exists(path):
        return open(path, "rb")
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rb")
    raise FileNotFoundError(path)


def read_idx(path):
    """IDX file -> uint8 array of its dims (MNIST format)."""
    with _open(path) as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an 8-bit IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


def mnist_test(data_dir, image_pool):
    """Test split of an MNIST-format folder -> ([tokens [P]], [label]).

    image_pool: average-pool each 28x28 image by this factor (README: "the digits pooled to 7x7
    pixel tokens"). GAP: the docs do not say whether the mean is rounded back to 8 bits; it is
    (round half up: (sum + area/2) // area, datasets/mnist_family.h)."""
    images = read_idx(os.path.join(data_dir, "t10k-images-idx3-ubyte")).astype(np.int64)
    labels = read_idx(os.path.join(data_dir, "t10k-labels-idx1-ubyte")).astype(np.int64)
    p = image_pool
    if p > 1:
        s = 28 // p
        sums = images.reshape(-1, s, p, s, p).sum(axis=(2, 4))
        images = (sums + (p * p) // 2) // (p * p)
    return [img.reshape(-1) for img in images], list(labels)


# EXPERIMENTS.md "Data formats": ids from 1 in the order [MIN [MAX [MED [SM X 0-9; 0 = pad.
LISTOPS_LRA = {t: i + 1 for i, t in enumerate(["[MIN", "[MAX", "[MED", "[SM", "X"] +
                                               [str(d) for d in range(10)])}
LISTOPS_2021 = {t: i + 1 for i, t in enumerate(["MIN", "MAX", "MED", "SM"] +
                                               [str(d) for d in range(10)])}


def listops_tokens(source, tokenizer):
    if tokenizer == "lra":  # `]` -> X, drop ( and ), split on whitespace
        words = source.replace("]", "X").replace("(", " ").replace(")", " ").split()
        return [LISTOPS_LRA[w] for w in words]
    # lra_2021: split on every non-alphanumeric character (brackets vanish)
    words = "".join(c if c.isalnum() else " " for c in source).split()
    return [LISTOPS_2021[w] for w in words]


def listops_test(data_dir, tokenizer, max_len):
    tokens, labels = [], []
    with open(os.path.join(data_dir, "basic_test.tsv"), encoding="utf-8") as f:
        header = f.readline()
        assert header.rstrip("\r\n") == "Source\tTarget", header
        for line in f:
            line = line.rstrip("\r\n")
            if not line:
                continue
            source, target = line.split("\t")
            tokens.append(np.array(listops_tokens(source, tokenizer)[:max_len], dtype=np.int64))
            labels.append(int(target))
    return tokens, labels


def aan_test(data_dir, max_len):
    """new_aan_pairs.test.tsv (LRA Retrieval; README "AAN pairs"): lines `label, id1, id2, text1,
    text2`, no header -> ([(ids1, ids2)], labels). GAP: ids are byte + 1 (0 = pad, vocab 257) of
    the first min(10,000, max_len) bytes, the label "0"/"1" or a float equal to it
    (datasets/aan.h)."""
    with open(os.path.join(data_dir, "new_aan_pairs.test.tsv"), "rb") as f:
        lines = f.read().split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    keep = min(10000, max_len)
    pairs, labels = [], []
    for line in lines:
        label, _, _, text1, text2 = line.removesuffix(b"\r").split(b"\t")
        pairs.append(tuple(np.frombuffer(t[:keep], dtype=np.uint8).astype(np.int64) + 1
                           for t in (text1, text2)))
        labels.append(int(float(label)))
    return pairs, labels


def load_examples(config, data_dir):
    """-> (list of token arrays (content only; pairs of them for aan), labels, vocab_size,
    content max_len)."""
    d = config["data"]
    name = d["dataset"]
    limit = d.get("eval_limit", 0) or 0
    if name in ("mnist", "fashion-mnist"):
        pool = d.get("image_pool", 1) or 1
        xs, ys = mnist_test(data_dir, pool)
        vocab, default_len = 256, (28 // pool) ** 2
    elif name == "listops":
        tok = d.get("tokenizer", "lra")
        vocab = 17 if tok == "lra" else 16
        default_len = 2000
        xs, ys = listops_test(data_dir, tok, d.get("max_len", 0) or default_len)
    elif name == "aan":
        vocab, default_len = 257, 4000
        xs, ys = aan_test(data_dir, d.get("max_len", 0) or default_len)
    else:
        raise Unsupported(f"data.dataset: {name}")
    max_len = d.get("max_len", 0) or default_len
    if limit > 0:
        xs, ys = xs[:limit], ys[:limit]
    return xs, ys, vocab, max_len


# --------------------------------------------------------------------------------------------
# Basic layers (PyTorch conventions: Linear weight [out, in])
# --------------------------------------------------------------------------------------------

def linear(p, name, x):
    """x [..., in] -> [..., out]: x W^T + b (b optional)."""
    y = x @ p[name + ".weight"].T
    if name + ".bias" in p:
        y = y + p[name + ".bias"]
    return y


def layer_norm(p, name, x, eps=1e-5):
    """GAP: LayerNorm eps is not in the docs; PyTorch's default 1e-5 (relpos uses 1e-5)."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]


def gelu(x):
    """GAP: exact (erf) GELU, not the tanh approximation; the docs say only "GELU"."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def relu(x):
    return np.maximum(x, 0.0)


def feed_forward(p, name, x, activation):
    """fc2(act(fc1(x))) (DESIGN.md §4 FeedForward)."""
    h = linear(p, name + ".fc1", x)
    h = gelu(h) if activation == "gelu" else relu(h)
    return linear(p, name + ".fc2", h)


def sinusoidal_table(n, d):
    """GAP: the docs say only "sinusoidal"; Vaswani et al.'s interleaved form,
    PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same angle)."""
    pos = np.arange(n, dtype=np.float64)[:, None]
    j = np.arange(d)
    angle = pos / np.power(10000.0, (j - j % 2) / d)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))


# --------------------------------------------------------------------------------------------
# Feature maps phi for linear attention (README "Attention layers"; seed 002 §2.3, §3.1)
# --------------------------------------------------------------------------------------------

def feature_map(att, x, positions, ctx):
    """x [H, L, D] -> phi(x) [H, L, F] >= 0; positions [L] (cosformer only)."""
    fm = att.get("feature_map", "elu1")
    if fm == "elu1":  # seed 002 eq. 4: elu(x) + 1
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
    if fm == "relu":  # relu(x) + relu_eps (EXPERIMENTS.md: relu(x) + 1e-3 in the LRA runs)
        return relu(x) + float(att.get("relu_eps", 1e-3))
    if fm == "sikf":  # seed 002 §3.1 eq. 9: phi(x) = exp(x), unshifted (README: the shift
        return np.exp(x)  # "changes nothing but the range")
    if fm == "dpfp":  # seed 002 eq. 6 (Schlag et al. 2021): r = [relu(x), relu(-x)] in R^2D,
        nu = int(att.get("nu", 1))  # phi_(i,nu) = r_i r_(i+nu mod 2D), nu = 1..nu blocks
        r = np.concatenate([relu(x), relu(-x)], axis=-1)
        return np.concatenate([r * np.roll(r, -i, axis=-1) for i in range(1, nu + 1)], axis=-1)
    if fm == "performer":  # README: exp(W x^ - |x^|^2 / 2) / sqrt(m)
        w = ctx["buffers"][ctx["prefix"] + ".attention.feature_map.projection"]  # [m, D]
        # GAP: x^ is not defined in the docs; x^ = x D^(-1/4) (the softmax kernel's scaling).
        xs = x * x.shape[-1] ** -0.25
        return np.exp(xs @ w.T - 0.5 * (xs * xs).sum(-1, keepdims=True)) / math.sqrt(w.shape[0])
    if fm == "cosformer":  # Qin et al. 2022 eq. 9-11: [relu(x) cos(pi i / 2M), relu(x) sin(..)]
        m = float(att.get("cosformer_len", ctx["max_len"]))
        ang = (np.pi * positions / (2.0 * m))[None, :, None]
        return np.concatenate([relu(x) * np.cos(ang), relu(x) * np.sin(ang)], axis=-1)
    raise Unsupported(f"model.attention.feature_map: {fm}")


# --------------------------------------------------------------------------------------------
# Relative positional encodings
# --------------------------------------------------------------------------------------------

SHARED = {"on": False}


def positional_module(prefix):
    """The encoding's parameter prefix in the layer `prefix`. With model.share_positional one
    module serves every layer and the checkpoint lists it once, under the first layer
    (docs/architecture.md)."""
    if SHARED["on"]:
        prefix = "encoder.layers.0.attn"
    return prefix + ".positional"


def positional_name(prefix):
    """The encoding's weight of the layer `prefix`."""
    return positional_module(prefix) + ".weight"


def shaw_relative(pos_opts, w, lq, lk):
    """Shaw et al. 2018 eq. 4-5 / seed 003 §III: the table index [Lq, Lk] of clip(j - i, -k, k) + k
    (query i at position i, key j at j: cross attention counts both from 0).

    GAP: seed 003 writes RP_clip(i - j); the docs do not say which sign the stored rows use, that
    the embeddings [2k + 1, D] are shared by the heads, nor the default window (16). relpos:
    row r embeds the clipped distance j - i = r - k (layers/attention/shaw.h)."""
    k = (w.shape[0] - 1) // 2
    i = np.arange(lq)[:, None]
    j = np.arange(lk)[None, :]
    return np.clip(j - i, -k, k) + k


def shaw_scores(pos_opts, p, prefix, qh, lk):
    """S[h, i, j] = q_i . w_clip(j - i) [H, Lq, Lk] (added to Q K^T before the 1/sqrt(D) scale,
    docs/adding-attention.md; seed 004 eq. 1 the same for skew)."""
    w = p[positional_name(prefix)]  # [2k + 1, D]
    idx = shaw_relative(pos_opts, w, qh.shape[1], lk)
    qw = qh @ w.T  # [H, L, 2k + 1]
    return np.take_along_axis(qw, np.broadcast_to(idx, qh.shape[:1] + idx.shape), axis=2)


def skew_scores(pos_opts, p, prefix, qh, lk, layer_max_len):
    """Seed 004: S = truncate(transpose(diagonal(Q E, 0, t3 - 1))): S[i, j] = q_i . E[:, t3 - 1 -
    (j - i)], E [D, 2 t3 - 1] (column c embeds the shift t3 - 1 - c), t3 = positional max_len,
    default the layer's (GAP: the docs say "max_len the model's"). [H, Lq, Lk]: seed 004's cross
    attention truncates to the Lk keys, both sequences counted from 0."""
    e = p[positional_name(prefix)]
    t3 = (e.shape[1] + 1) // 2
    assert t3 == int(pos_opts.get("max_len", layer_max_len)), (t3, layer_max_len)
    i = np.arange(qh.shape[1])[:, None]
    j = np.arange(lk)[None, :]
    col = t3 - 1 - (j - i)
    qe = qh @ e  # [H, L, 2 t3 - 1]
    return np.take_along_axis(qe, np.broadcast_to(col, qh.shape[:1] + col.shape), axis=2)


def toeplitz_weights(weight, symmetric, n):
    """FastRPB weights of the distances d = -(n-1) .. n-1 -> [H, 2n - 1] (column n - 1 + d).

    Stored weights [H, 2N - 1] (full; column N - 1 + d embeds d) or [H, N] (symmetric, w_|d|).
    GAP: the docs give no layout of the stored vector; seed 002 eq. 11 lists w_-(N-1) .. w_(N-1)
    in this order, which relpos follows."""
    d = np.arange(-(n - 1), n)
    if symmetric:
        return weight[:, np.abs(d)]
    big_n = (weight.shape[1] + 1) // 2
    return weight[:, big_n - 1 + d]


def fastrpb_1d(pos_opts, p, prefix, vh, front, back):
    """FastRPB (seed 002 eq. 10-12): W V added to the attention output before out_proj, W[i, j] =
    w_(i-j) over the content tokens; special tokens (front/back) get no row and no column
    (EXPERIMENTS.md). vh [H, L, Dv] -> [H, L, Dv].

    GAP/convention: seed 002 eq. 12 has W[n, m] = w_(m-n); EXPERIMENTS.md writes
    t(c - c') (output minus input) and relpos uses W[i, j] = w_(i-j): the transpose of the
    paper's matrix for the same stored vector."""
    w = p[positional_name(prefix)]
    sym = pos_opts.get("parameterization", "full") == "symmetric"
    L = vh.shape[1]
    n = L - front - back
    t = toeplitz_weights(w, sym, n)  # [H, 2n - 1]
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    W = t[:, (i - j) + n - 1]  # [H, n, n]
    out = np.zeros_like(vh)
    out[:, front:front + n] = W @ vh[:, front:front + n]
    return out


def fastrpb_2d(pos_opts, p, prefix, vh, front, back, grid):
    """FastRPB 2D (seed 002 §3.2.2, App. B.3): W2d[(r,c),(r',c')] = t(r - r') + t(c - c') on a
    rows x cols row-major grid of the content tokens, one weight vector per head for both axes
    (EXPERIMENTS.md). vh [H, L, Dv] -> [H, L, Dv]."""
    w = p[positional_name(prefix)]
    sym = pos_opts.get("parameterization", "full") == "symmetric"
    rows, cols = grid
    n = rows * cols
    assert vh.shape[1] == n + front + back
    r = np.repeat(np.arange(rows), cols)
    c = np.tile(np.arange(cols), rows)
    big = max(rows, cols)
    t = toeplitz_weights(w, sym, big)  # [H, 2 big - 1]
    W = t[:, (r[:, None] - r[None, :]) + big - 1] + t[:, (c[:, None] - c[None, :]) + big - 1]
    out = np.zeros_like(vh)
    out[:, front:front + n] = W @ vh[:, front:front + n]
    return out


# --------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------

def softmax_attention(qh, kh, vh, bias):
    """Vaswani eq. 1 with a score bias (seed 004 eq. 1): softmax((Q K^T + S) / sqrt(D)) V."""
    s = qh @ kh.transpose(0, 2, 1)
    if bias is not None:
        s = s + bias
    s = s / math.sqrt(qh.shape[-1])
    s = s - s.max(-1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(-1, keepdims=True)
    return a @ vh


def linear_attention(att, phi_q, phi_k, vh, terms):
    """README: Y_i = (sum_j phi(q_i).phi(k_j) v_j + A_i) / (sum_j phi(q_i).phi(k_j) + b_i + eps)
    with {A_i, b_i} a positional encoding's kernel terms (Shaw: S_rel V, S_rel 1; seed 003 §IV).
    Written densely: the `algorithm` option may not change the result."""
    eps = float(att.get("eps", 1e-6))
    s = phi_q @ phi_k.transpose(0, 2, 1)  # [H, L, L]
    num = s @ vh
    den = s.sum(-1, keepdims=True)
    if terms is not None:
        num = num + terms[0]
        den = den + terms[1]
    return num / (den + eps)


def shaw_kernel_terms(pos_opts, p, prefix, phi_q, vh):
    """Seed 003 §III-IV: S_rel[i, j] = phi(q_i) . RP_clip(.) -> (S_rel V, S_rel 1)."""
    w = p[positional_name(prefix)]
    if phi_q.shape[-1] != w.shape[1]:
        raise Unsupported("shaw with a feature map that changes the width")
    idx = shaw_relative(pos_opts, w, phi_q.shape[1], vh.shape[1])
    pw = phi_q @ w.T
    s = np.take_along_axis(pw, np.broadcast_to(idx, phi_q.shape[:1] + idx.shape), axis=2)
    return s @ vh, s.sum(-1, keepdims=True)


def multi_head_attention(cfg, ctx, p, prefix, x, kv=None):
    """x [Lq, d] attends kv [Lk, d] (default x: self-attention) -> [Lq, d] (docs/architecture.md
    "layers: attention": q/k/v projections, the variant with the encoding's score bias / kernel
    terms, the output term, heads merged). Query i sits at position i, key j at j."""
    m = cfg["model"]
    att, pos = ctx["attention"], ctx["positional"]
    H = m["num_heads"]
    kv = x if kv is None else kv
    L, lk = x.shape[0], kv.shape[0]
    q = linear(p, prefix + ".q_proj", x)
    k = linear(p, prefix + ".k_proj", kv)
    v = linear(p, prefix + ".v_proj", kv)
    dh = q.shape[1] // H
    qh, kh, vh = (t.reshape(len(t), H, dh).transpose(1, 0, 2) for t in (q, k, v))  # [H, L, Dh]
    ptype = pos.get("type", "none")
    ctx = dict(ctx, prefix=prefix)
    if ptype in ("sinspe", "convspe"):  # q, k rewritten into R features; the head size is R
        qh, kh = spe_rewrite(pos, p, positional_module(prefix), qh, kh, np.arange(L),
                             ctx["dtype"])
    if att["type"] == "softmax":
        bias = None
        if ptype == "shaw":
            bias = shaw_scores(pos, p, prefix, qh, lk)
        elif ptype == "skew":
            bias = skew_scores(pos, p, prefix, qh, lk, ctx["max_len"])
        y = softmax_attention(qh, kh, vh, bias)
    elif att["type"] == "linear":
        phi_q = feature_map(att, qh, np.arange(L, dtype=np.float64), ctx)
        phi_k = feature_map(att, kh, np.arange(lk, dtype=np.float64), ctx)
        terms = shaw_kernel_terms(pos, p, prefix, phi_q, vh) if ptype == "shaw" else None
        y = linear_attention(att, phi_q, phi_k, vh, terms)
    else:
        raise Unsupported(f"model.attention.type: {att['type']}")
    front = int(pos.get("special_tokens_front", ctx["front"]))
    back = int(pos.get("special_tokens_back", ctx["back"]))
    if ptype == "fastrpb":
        y = y + fastrpb_1d(pos, p, prefix, vh, front, back)
    elif ptype == "fastrpb2d":
        grid = pos.get("grid") or [int(round(math.sqrt(L - front - back)))] * 2
        y = y + fastrpb_2d(pos, p, prefix, vh, front, back, grid)
    if m.get("head_combiner", "concat") == "stacked":
        # README: Tanh(Tanh(Stack(heads) W^H) W^O), applied to every feature of every token.
        # GAP: the docs do not say how the Dh x outputs values are laid out per token;
        # relpos: entry e * outputs + o (layers/attention/stacked_heads.h).
        st = y.transpose(1, 2, 0)  # [L, Dh, H]
        h1 = np.tanh(st @ p[prefix + ".combiner.w_h.weight"].T)
        h2 = np.tanh(h1 @ p[prefix + ".combiner.w_o.weight"].T)  # [L, Dh, outputs]
        return h2.reshape(L, -1)
    merged = y.transpose(1, 0, 2).reshape(L, H * dh)
    return linear(p, prefix + ".out_proj", merged)


# --------------------------------------------------------------------------------------------
# Encoder, classifier and dual encoder (docs/architecture.md "layers: models"; EXPERIMENTS.md
# "LRA encoder", "MNIST model")
# --------------------------------------------------------------------------------------------

def embed(cfg, ctx, p, ids):
    """ids [T] (with [CLS]/[SEP] ids vocab, vocab + 1 when cls: token) -> [T, d]."""
    m = cfg["model"]
    vocab = ctx["vocab"]
    if m["input"] == "tokens":
        return p["encoder.embedding.weight"][ids]
    if m["input"] == "pixels":  # value / 255 through Linear(1, d)
        x = linear(p, "encoder.pixel_proj", (np.minimum(ids, 255) / 255.0)[:, None])
        special = ids >= vocab
        if special.any():
            x[special] = p["encoder.special.weight"][ids[special] - vocab]
        return x
    if m["input"] == "patches":  # README "cpu scale": token (i, j) = the size x size pixels
        size = m.get("patch_size") or 3  # around pixel (stride i, stride j), zero outside.
        stride = m.get("patch_stride") or 2  # GAP: pixel order inside a patch (row-major)
        side = int(round(math.sqrt(len(ids))))  # and pad = ceil((size - stride) / 2).
        pad = (size - stride + 1) // 2
        img = np.zeros((side + 2 * size, side + 2 * size))
        img[size:size + side, size:size + side] = ids.reshape(side, side) / 255.0
        g = side // stride
        patches = np.empty((g * g, size * size))
        for a in range(g):
            for b in range(g):
                top, left = a * stride - pad + size, b * stride - pad + size
                patches[a * g + b] = img[top:top + size, left:left + size].reshape(-1)
        return linear(p, "encoder.patch_proj", patches)
    raise Unsupported(f"model.input: {m['input']}")


def encoder_block(cfg, ctx, p, i, x):
    """pre: x + attn(ln1 x), + mlp(ln2 x); post: ln1(x + attn x), ln2(x + mlp x)."""
    m = cfg["model"]
    pre = f"encoder.layers.{i}"
    act = m.get("activation", "gelu")
    if m["norm"] == "pre":
        x = x + multi_head_attention(cfg, ctx, p, pre + ".attn", layer_norm(p, pre + ".ln1", x))
        return x + feed_forward(p, pre + ".mlp", layer_norm(p, pre + ".ln2", x), act)
    x = layer_norm(p, pre + ".ln1", x + multi_head_attention(cfg, ctx, p, pre + ".attn", x))
    return layer_norm(p, pre + ".ln2", x + feed_forward(p, pre + ".mlp", x, act))


def encode(cfg, ctx, p, content):
    """content ids [T] of one example (no padding) -> the encoder's hidden states [L, d]."""
    m = cfg["model"]
    ids = np.asarray(content, dtype=np.int64)
    if m["cls"] == "token":  # [CLS] content [SEP], ids vocab and vocab + 1
        ids = np.concatenate([[ctx["vocab"]], ids, [ctx["vocab"] + 1]])
    x = embed(cfg, ctx, p, ids)  # [T, d]
    if m["cls"] == "vector":  # a learned vector prepended after the embedding (LRA)
        x = np.concatenate([p["encoder.cls"][None, :], x], axis=0)
    L = x.shape[0]
    positions = m.get("positions", "learned")
    if positions == "learned":  # one vector per position, the CLS's included (README cpu scale)
        x = x + p["encoder.position.weight"][:L]
    elif positions == "learned2d":  # a row vector plus a column vector; GAP: specials' own
        rows, cols = m["position_grid"]  # vectors ("position.special", front then back)
        grid = (p["encoder.position.row"][:, None, :] +
                p["encoder.position.col"][None, :, :]).reshape(rows * cols, -1)
        parts = []
        if ctx["front"]:
            parts.append(p["encoder.position.special"][:ctx["front"]])
        parts.append(grid)
        if ctx["back"]:
            parts.append(p["encoder.position.special"][ctx["front"]:])
        x = x + np.concatenate(parts, axis=0)[:L]
    elif positions == "sinusoidal":
        x = x + sinusoidal_table(L, x.shape[1])
    elif positions != "none":
        raise Unsupported(f"model.positions: {positions}")
    if m["norm"] == "post" and m.get("embedding_norm", True):  # BERT's embedding LayerNorm
        x = layer_norm(p, "encoder.embedding_norm", x)
    for i in range(m["num_layers"]):
        x = encoder_block(cfg, ctx, p, 0 if m.get("tied_blocks") else i, x)
    if m["norm"] == "pre":  # the final LayerNorm of pre-LN (EXPERIMENTS.md LRA encoder)
        x = layer_norm(p, "encoder.norm", x)
    return x


def pool(cfg, x):
    """[L, d] -> [d]: the CLS row, or the mean over the real tokens (CLS included)."""
    return x[0] if cfg["model"]["pooling"] == "cls" else x.mean(0)


def mlp_head(p, x, n):
    """head.fc1 -> ReLU -> ... -> head.fcN: N Dense layers with a ReLU between two."""
    for i in range(1, n + 1):
        x = linear(p, f"head.fc{i}", x)
        if i < n:
            x = relu(x)
    return x


def classify(cfg, ctx, p, content):
    """content ids [T] of one example (no padding) -> logits [classes]."""
    pooled = pool(cfg, encode(cfg, ctx, p, content))
    if cfg["model"]["head"] == "mlp":  # Dense(mlp_dim) -> ReLU -> Dense(classes)
        return mlp_head(p, pooled, 2)
    return linear(p, "classifier", np.tanh(linear(p, "pooler", pooled)))  # BERT pooler


def cross_interaction(cfg, ctx, p, x, y):
    """x [Lx, d] attends the other document y [Ly, d] once with the model's attention and encoding
    (README), both counted from position 0 (seed 004's cross attention). GAP: the docs give no
    block around it; relpos (layers/models/dual_encoder.cpp): one module `interaction` for both
    directions, a residual and its own LayerNorm `ln`: pre x + attn(ln x, ln y), post
    ln(x + attn(x, y))."""
    def norm(t):
        return layer_norm(p, "interaction.ln", t)

    if cfg["model"]["norm"] == "pre":
        return x + multi_head_attention(cfg, ctx, p, "interaction.attn", norm(x), norm(y))
    return norm(x + multi_head_attention(cfg, ctx, p, "interaction.attn", x, y))


def dual_classify(cfg, ctx, p, pair):
    """(document 1, document 2) ids of one example -> logits [classes] (LRA Retrieval,
    docs/architecture.md): one encoder over each, pooled u, v, then [u, v] (concat) or
    [u, v, u*v, u-v] (features) through Dense(mlp_dim) -> ReLU -> Dense(mlp_dim / 2) -> ReLU ->
    Dense(classes) (configs/lra/retrieval/base.yaml). GAP: the interaction updates both documents
    from the encoder outputs (b attends a, not a's update), before pooling."""
    m = cfg["model"]
    a, b = (encode(cfg, ctx, p, doc) for doc in pair)
    if m.get("interaction", "none") == "cross_attention":
        a, b = cross_interaction(cfg, ctx, p, a, b), cross_interaction(cfg, ctx, p, b, a)
    u, v = pool(cfg, a), pool(cfg, b)
    parts = [u, v] if m.get("combine", "concat") == "concat" else [u, v, u * v, u - v]
    return mlp_head(p, np.concatenate(parts), 3)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def as_mapping(value):
    if value is None or value == "none":
        return {"type": "none"}
    if isinstance(value, str):
        return {"type": value}
    return dict(value)


def check_supported(cfg, buffers):
    """Raises Unsupported naming the first key this reference does not implement."""
    m = cfg["model"]
    if m.get("type") not in ("sequence_classifier", "dual_encoder"):
        raise Unsupported(f"model.type: {m.get('type')}")
    att = as_mapping(m.get("attention"))
    pos = as_mapping(m.get("positional"))
    if m.get("interaction", "none") != "none" and pos["type"] in ("fastrpb", "fastrpb2d"):
        raise Unsupported(f"model.positional.type: {pos['type']} with model.interaction (W "
                          "relates positions of one sequence; relpos refuses it when Lq != Lk)")
    if att["type"] not in ("softmax", "linear"):
        raise Unsupported(f"model.attention.type: {att['type']}")
    if att["type"] == "linear" and att.get("feature_map", "elu1") not in (
            "elu1", "relu", "sikf", "dpfp", "performer", "cosformer"):
        raise Unsupported(f"model.attention.feature_map: {att.get('feature_map')}")
    if pos["type"] not in ("none", "fastrpb", "fastrpb2d", "shaw", "skew", "sinspe", "convspe"):
        raise Unsupported(f"model.positional.type: {pos['type']}")
    SHARED["on"] = bool(m.get("share_positional"))
    if cfg.get("train", {}).get("precision", "f32") != "f32":
        raise Unsupported(f"train.precision: {cfg['train']['precision']}")
    if m.get("dtype", "f32") not in ("f32", "f64"):
        raise Unsupported(f"model.dtype: {m.get('dtype')}")
    return att, pos


F32_RTOL, F64_RTOL = 1e-4, 1e-9  # an f64 model's logits are written in f64


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("predictions")
    ap.add_argument("--data-dir", help="the dataset folder (default: data.dir of the config)")
    ap.add_argument("--rtol", type=float, default=None,
                    help="tolerance on max |diff| / max |reference logit| (default "
                         f"{F32_RTOL:g} for an f32 model, {F64_RTOL:g} for f64)")
    ap.add_argument("--show", type=int, default=0, help="print the N worst examples")
    args = ap.parse_args(argv)

    params, buffers, cfg = load_checkpoint(args.checkpoint)
    try:
        att, pos = check_supported(cfg, buffers)
        data_dir = args.data_dir or cfg["data"]["dir"]
        xs, ys, vocab, max_len = load_examples(cfg, data_dir)
        m = cfg["model"]
        vocab = m.get("vocab_size") or vocab
        front = 0 if m["cls"] == "none" else 1
        back = 1 if m["cls"] == "token" else 0
        content = max_len
        if m["input"] == "patches":
            s = int(round(math.sqrt(max_len)))
            content = (s // (m.get("patch_stride") or 2)) ** 2
        ctx = {"attention": att, "positional": pos, "vocab": vocab, "front": front,
               "back": back, "max_len": (m.get("max_len") or content) + front + back,
               "dtype": np.float64 if m.get("dtype") == "f64" else np.float32}
        if att.get("feature_map") == "performer" and not any(
                n.endswith("feature_map.projection") for n in buffers):
            raise Unsupported("model.attention.feature_map: performer (the checkpoint holds "
                              "no buffers/...feature_map.projection)")
        ctx["buffers"] = buffers
    except Unsupported as e:
        print(f"reference_classifier: not implemented: {e}")
        return 2

    with h5py.File(args.predictions, "r") as f:
        got = np.asarray(f["logits"][()], dtype=np.float64)
        got_labels = np.asarray(f["labels"][()], dtype=np.int64)
    forward = dual_classify if cfg["model"]["type"] == "dual_encoder" else classify
    ref = np.stack([forward(cfg, ctx, params, x) for x in xs])
    if got.shape != ref.shape:
        print(f"shape mismatch: relpos {got.shape}, reference {ref.shape}")
        return 1
    labels_ok = np.array_equal(got_labels, np.asarray(ys))
    diff = np.abs(got - ref)
    scale = max(np.abs(ref).max(), 1e-30)
    max_abs = diff.max()
    rel = max_abs / scale
    worst = diff.max(1)
    print(f"examples {len(xs)}  classes {ref.shape[1]}  logit scale {scale:.4g}  "
          f"max abs diff {max_abs:.3e}  max rel diff {rel:.3e}  labels "
          f"{'equal' if labels_ok else 'DIFFER'}  argmax agree "
          f"{np.mean(ref.argmax(1) == got.argmax(1)):.3f}")
    for idx in np.argsort(-worst)[:args.show]:
        lengths = [len(t) for t in xs[idx]] if isinstance(xs[idx], tuple) else len(xs[idx])
        print(f"  example {idx}: len {lengths} max abs diff {worst[idx]:.3e}")
    rtol = args.rtol if args.rtol is not None else (
        F64_RTOL if cfg["model"].get("dtype") == "f64" else F32_RTOL)
    ok = rel <= rtol and labels_ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:  # a file that is missing or not HDF5 / text: one line, exit 2
        print(f"reference_classifier: cannot read the inputs: {e}", file=sys.stderr)
        sys.exit(2)
