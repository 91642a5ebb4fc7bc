#!/usr/bin/python3
"""Independent float64 numpy forward pass of relpos's character language models.

    reference_lm.py CHECKPOINT PREDICTIONS.h5 --data-dir DIR [--set eval.mem_len=64 ...]

Recomputes the log-probability of every target of the test split (or --split) from the
checkpoint's parameters and resolved config and the raw text, compares it with the `log_prob`
dataset that `relpos eval CHECKPOINT --predictions PREDICTIONS.h5` wrote, prints the largest
absolute difference and exits 0 when it is within --tol (default 1e-4, an f32 model), 1 when it
is not, 2 when the config uses something this script does not implement (one line naming the
key).

Written from the documentation (README "Language models", docs/language-models.md,
docs/architecture.md, docs/adding-attention.md, EXPERIMENTS.md) and the papers:
  [TXL]  Dai et al. 2019, Transformer-XL, eq. in Sec. 3.3 (terms (a)-(d)) and Appendix B
         (rel-shift); the reference code kimiyoung/transformer-xl (MemTransformerLM), whose
         checkpoints relpos imports and evaluates "to within 1e-7", so its choices are implied.
  [LIN]  Katharopoulos et al. 2020, causal linear attention (FastRPB paper eq. 3).
  [RPB]  FastRPB paper (seed 002) eq. 10-12: Y = Attention(Q, K, V) + W V, W Toeplitz; causal:
         W lower-triangular (EXPERIMENTS.md).
  [SIKF] FastRPB paper Sec. 3.1: phi(x) = exp(x).  [DPFP] eq. 6.  [ELU] eq. 4.
  Shaw (seed 003, S_rel = x_i . RP_clip(i-j)), skew (seed 004 eq. 1), Performer (README:
  exp(W x^ - |x^|^2/2)/sqrt(m)), cosFormer (cos/sin re-weighting by position).
Implemented: transformer_xl (rel_xl fused or not, memory, clamp_len, same_length, untie_r,
pre/post-LN), transformer_lm (learned positions), causal_lm with softmax or linear attention
(elu1, relu, sikf, dpfp, performer, cosformer; any algorithm/chunk; recurrent_state), encodings
none/fastrpb/shaw/skew, positions none/learned/sinusoidal, eval layouts relpos/reference, f32
and f64 models, sinspe and convspe (their evaluation noise from the Philox stream,
tools/reference_spe.py), head_combiner stacked, index_first (the standard block, the same
function by docs/model-details.md). Refused with exit 2: train.precision bf16.
Where the papers leave a choice open (LayerNorm's eps, GELU's form, the sinusoid layouts, which
Shaw row holds which distance, Performer's input scale, cosFormer's default M, FastRPB's column
order, the embedding scale, the untie_r names, the dtype of log_prob), the script follows
docs/model-details.md, whose section each function names.

Only /usr/bin/python3 with numpy, h5py and PyYAML.
"""
import argparse
import math
import os
import sys

import h5py
import numpy as np
import yaml

from reference_spe import spe_rewrite


class Unsupported(Exception):
    """A config this reference does not implement; the message names the key."""


# ----------------------------------------------------------------------------------------------
# Config and checkpoint
# ----------------------------------------------------------------------------------------------

def set_key(cfg, path, value):
    node = cfg
    parts = path.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = value


def load_checkpoint(path):
    with h5py.File(path, "r") as f:
        raw = f.attrs["config"]
        cfg = yaml.safe_load(raw.decode() if isinstance(raw, bytes) else raw)
        params = {k: np.asarray(f["params"][k][()], dtype=np.float64) for k in f["params"]}
        buffers = {}
        if "buffers" in f:
            f["buffers"].visititems(
                lambda n, o: buffers.__setitem__(n, np.asarray(o[()])) if isinstance(o, h5py.Dataset)
                else None)
        vocab = np.asarray(f["state/vocabulary"][()], dtype=np.uint8)
    return cfg, params, buffers, vocab


def read_ids(data_dir, split, vocab):
    """The split's bytes as ids: id = index of the byte in the checkpoint's vocabulary
    (docs/language-models.md: "A checkpoint stores the byte of each id")."""
    name = {"train": "train.txt", "val": "valid.txt", "test": "test.txt"}[split]
    raw = np.frombuffer(open(os.path.join(data_dir, name), "rb").read(), dtype=np.uint8)
    table = -np.ones(256, dtype=np.int64)
    table[vocab] = np.arange(len(vocab))
    ids = table[raw]
    if (ids < 0).any():
        raise SystemExit(f"{name}: byte {raw[ids < 0][0]} not in the checkpoint's vocabulary")
    return ids


# ----------------------------------------------------------------------------------------------
# Building blocks (x: [..., d] float64)
# ----------------------------------------------------------------------------------------------

def linear(x, w, b=None):
    """PyTorch Linear: x W^T + b; w [out, in]."""
    y = x @ w.T
    return y if b is None else y + b


def layer_norm(x, w, b, eps=1e-5):
    """LayerNorm over the last dim, biased variance, eps 1e-5 (docs: "Layers every model
    shares")."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def activation(x, name):
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "gelu":  # the exact x * Phi(x), not the tanh form (docs: "Layers every model ...")
        from math import erf
        return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))
    raise Unsupported(f"model.activation: {name}")


def mlp(x, p, prefix, act):
    """Position-wise feed-forward: fc2(act(fc1(x))) (TXL reference PositionwiseFF.CoreNet)."""
    h = activation(linear(x, p[prefix + "fc1.weight"], p[prefix + "fc1.bias"]), act)
    return linear(h, p[prefix + "fc2.weight"], p[prefix + "fc2.bias"])


def split_heads(x, H):
    """[B, L, H*dh] -> [B, H, L, dh]; head h = columns h*dh:(h+1)*dh (reference view order)."""
    B, L, E = x.shape
    return x.reshape(B, L, H, E // H).transpose(0, 2, 1, 3)


def merge_heads(x):
    """[B, H, L, dh] -> [B, L, H*dh]."""
    B, H, L, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, L, H * dh)


def visible(Lq, Lk, window=None):
    """[Lq, Lk] bool: query i (at absolute position M + i, M = Lk - Lq) sees key j <= M + i
    (docs/adding-attention.md: causality aligned at the ends), and with a window only the
    last `window` keys, itself included."""
    M = Lk - Lq
    i = np.arange(Lq)[:, None] + M
    j = np.arange(Lk)[None, :]
    vis = j <= i
    if window is not None:
        vis &= j > i - window
    return vis


def masked_softmax(scores, vis):
    """softmax over the last axis of scores [B, H, Lq, Lk] where vis; a row without a
    visible key outputs zeros (docs/architecture.md)."""
    s = np.where(vis, scores, -np.inf)
    m = np.max(s, -1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(vis, np.exp(s - m), 0.0)
    z = e.sum(-1, keepdims=True)
    return e / np.where(z > 0, z, 1.0)


# ----------------------------------------------------------------------------------------------
# Transformer-XL relative attention [TXL]
# ----------------------------------------------------------------------------------------------

def sinusoid_table(pos, d):
    """R_pos [len, d] = [sin(pos f), cos(pos f)] with f_k = 1 / 10000^(2k/d), concatenated as the
    TXL reference's PositionalEmbedding (docs: "Transformer-XL")."""
    inv_freq = 1.0 / (10000.0 ** (np.arange(0.0, d, 2.0) / d))
    ang = pos[:, None].astype(np.float64) * inv_freq[None, :]
    return np.concatenate([np.sin(ang), np.cos(ang)], -1)


def absolute_sinusoid(L, d):
    """Vaswani et al. 2017 absolute positions 0..L-1, interleaved: PE[:, 2k] = sin,
    PE[:, 2k+1] = cos (docs: "Absolute positions"; segment-relative: absolute positions are
    refused with memory)."""
    pe = sinusoid_table(np.arange(L), d)
    out = np.empty_like(pe)
    out[:, 0::2], out[:, 1::2] = pe[:, : d // 2], pe[:, d // 2:]
    return out


def rel_shift(x):
    """[TXL] App. B: pad a zero column in front, view [Lk + 1, Lq], drop the first row, view
    back. x: [B, H, Lq, Lk] with column k holding distance Lk - 1 - k."""
    B, H, Lq, Lk = x.shape
    padded = np.concatenate([np.zeros((B, H, Lq, 1)), x], -1)
    return padded.reshape(B, H, Lk + 1, Lq)[:, :, 1:, :].reshape(B, H, Lq, Lk)


def rel_xl_attention(q, k, v, r_k, u, vb, window):
    """Transformer-XL attention, terms (a)+(c) = (q + u) k^T and (b)+(d) = (q + v) (W_r R)^T
    rel-shifted, scaled by 1/sqrt(dh), causal over [memory; segment].
    q [B, H, Lq, dh], k/v [B, H, Lk, dh], r_k [H, Lk, dh] (distances Lk-1 ... 0),
    u/vb [H, dh] -> [B, H, Lq, dh]."""
    dh = q.shape[-1]
    ac = np.einsum("bhid,bhjd->bhij", q + u[None, :, None, :], k)
    bd = np.einsum("bhid,hjd->bhij", q + vb[None, :, None, :], r_k)
    bd = rel_shift(bd)
    scores = (ac + bd) / math.sqrt(dh)
    prob = masked_softmax(scores, visible(q.shape[2], k.shape[2], window))
    return prob @ v


# ----------------------------------------------------------------------------------------------
# Relative encodings that act on scores: Shaw (seed 003) and skew (seed 004)
# ----------------------------------------------------------------------------------------------

def distances(Lq, Lk):
    """[Lq, Lk] i - j with query i at absolute position M + i, M = Lk - Lq (key j at j)."""
    return (np.arange(Lq)[:, None] + (Lk - Lq)) - np.arange(Lk)[None, :]


def shaw_scores(x, table, window):
    """Shaw et al. 2018 / seed 003: S_rel[i, j] = x_i . W[k - clip(i - j, -k, k)], k = window:
    row 0 every key k or more positions before the query, as seed 003's algorithm (docs: "Shaw").
    x [B, H, Lq, D] (q for softmax, phi(q) for linear attention), table [2k+1, D] shared by
    the heads."""
    d = np.clip(distances(x.shape[2], window["Lk"]), -window["k"], window["k"])
    rows = window["k"] - d
    xr = x @ table.T  # [B, H, Lq, 2k+1]
    return np.take_along_axis(xr, np.broadcast_to(rows, xr.shape[:2] + rows.shape), -1)


def skew_scores(q, E, Lk):
    """Seed 004 eq. 1: S[i, j] = q_i . E[:, n - 1 - t], t = j - i the key's time relative to
    the query (E's columns run from the future n - 1 down to the past -n + 1), E [D, 2n-1]."""
    n = (E.shape[1] + 1) // 2
    d = distances(q.shape[2], Lk)
    col = np.clip(n - 1 + d, 0, 2 * n - 2)
    qe = q @ E  # [B, H, Lq, 2n-1]
    return np.take_along_axis(qe, np.broadcast_to(col, qe.shape[:2] + col.shape), -1)


# ----------------------------------------------------------------------------------------------
# Causal softmax and causal linear attention
# ----------------------------------------------------------------------------------------------

def softmax_attention(q, k, v, window, bias=None):
    """softmax((Q K^T + S) / sqrt(dh)) V, causal aligned at the ends; S a relative score bias
    added before the scale (docs/adding-attention.md, seed 004 eq. 1). [B,H,Lq,dh] ->
    [B,H,Lq,dv]."""
    scores = q @ k.transpose(0, 1, 3, 2)
    if bias is not None:
        scores = scores + bias
    scores = scores / math.sqrt(q.shape[-1])
    return masked_softmax(scores, visible(q.shape[2], k.shape[2], window)) @ v


def feature_map(x, att, pos=None, proj=None, cos_len=None):
    """phi of kernelized attention, elementwise on the head's features. x [..., D] -> [..., F].
    elu1: ELU(x) + 1 [ELU eq. 4]; relu: relu(x) + relu_eps (EXPERIMENTS.md); sikf: exp(x)
    [SIKF]; dpfp: x' = [relu(x), relu(-x)], phi = concat_{j=1..nu} x' * roll(x', j) [DPFP eq. 6];
    performer and cosformer below. pos [L]: the tokens' positions in the call."""
    fm = att.get("feature_map")
    if fm == "elu1":
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
    if fm == "relu":
        return np.maximum(x, 0.0) + float(att.get("relu_eps", 1e-3))
    if fm == "sikf":
        return np.exp(x)  # any shift cancels (README: the layer undoes it, eps included)
    if fm == "dpfp":
        nu = int(att.get("nu", 1))
        xp = np.concatenate([np.maximum(x, 0.0), np.maximum(-x, 0.0)], -1)
        return np.concatenate([xp * np.roll(xp, j, axis=-1) for j in range(1, nu + 1)], -1)
    if fm == "performer":
        # exp(W x^ - |x^|^2 / 2) / sqrt(m), W the saved projection [m, D] (positive random
        # features, FAVOR+), x^ = x D^(-1/4) so that x^_q . x^_k = q . k / sqrt(D) (docs:
        # "Attention").
        xh = x * x.shape[-1] ** -0.25
        m = proj.shape[0]
        return np.exp(xh @ proj.T - 0.5 * (xh ** 2).sum(-1, keepdims=True)) / math.sqrt(m)
    if fm == "cosformer":
        # cosFormer (Qin et al. 2022): [relu(x) cos(pi p / 2M), relu(x) sin(pi p / 2M)], p the
        # token's position in the call (queries at M_mem + i, keys at j), M = cosformer_len,
        # default the model's max_len as training resolved it (docs: "Attention").
        ang = (np.pi / (2.0 * cos_len)) * pos.astype(np.float64)[:, None]
        r = np.maximum(x, 0.0)
        return np.concatenate([r * np.cos(ang), r * np.sin(ang)], -1)
    raise Unsupported(f"model.attention.feature_map: {fm}")


def linear_attention(q, k, v, att, window, state=None, kernel_table=None):
    """Causal linear attention [LIN] (README formula, no shift):
    y_i = sum_{j<=i} phi(q_i).phi(k_j) v_j / (sum_{j<=i} phi(q_i).phi(k_j) + eps).
    q [B,H,Lq,D], k/v [B,H,Lk,D|dv]. `state` (recurrent_state): running sums
    {S: [B,H,F,dv] = sum phi(k) v^T, z: [B,H,F] = sum phi(k)} of every earlier segment, updated
    in place. Computed as the quadratic (dense masked) form in float64."""
    eps = float(att.get("eps", 1e-6))
    Lq, Lk = q.shape[2], k.shape[2]
    extra = dict(proj=att.get("_proj"), cos_len=att.get("_cos_len"))
    pq = feature_map(q, att, np.arange(Lq) + (Lk - Lq), **extra)
    pk = feature_map(k, att, np.arange(Lk), **extra)
    a = pq @ pk.transpose(0, 1, 3, 2)  # [B, H, Lq, Lk]: phi(q_i).phi(k_j)
    a = np.where(visible(q.shape[2], k.shape[2], window), a, 0.0)
    if kernel_table is not None:  # Shaw at linear cost: + S_rel V and S_rel 1 (README)
        a = a + np.where(visible(q.shape[2], k.shape[2], window), kernel_table(pq), 0.0)
    num = a @ v
    den = a.sum(-1)
    if state is not None:
        if state["S"] is not None:
            num = num + pq @ state["S"]
            den = den + np.einsum("bhif,bhf->bhi", pq, state["z"])
        S_new = np.einsum("bhjf,bhjd->bhfd", pk, v)
        z_new = pk.sum(2)
        state["S"] = S_new if state["S"] is None else state["S"] + S_new
        state["z"] = z_new if state["z"] is None else state["z"] + z_new
    return num / (den + eps)[..., None]


def fastrpb_term(v, w, parameterization, n_max, Lq):
    """Causal FastRPB [RPB eq. 10-12]: (W V)_i = sum_{j <= p_i} w_{p_i - j} v_j, p_i = M + i,
    W lower-triangular Toeplitz over [memory; segment]; added before the output projection,
    not normalised. v [B, H, Lk, dv]; w [H, 2N-1] (full: w_d at index N-1+d, d query minus key;
    docs: "FastRPB 1-D" on the paper's two orders) or [H, N] (symmetric: w_|d| at index |d|)."""
    B, H, Lk, dv = v.shape
    M = Lk - Lq
    d = (np.arange(Lq)[:, None] + M) - np.arange(Lk)[None, :]  # distance p_i - j
    if Lk > n_max:
        raise Unsupported(f"model.positional: keys {Lk} past FastRPB's table of {n_max}")
    if parameterization == "full":
        idx = np.clip(d + n_max - 1, 0, 2 * n_max - 2)
    elif parameterization == "symmetric":
        idx = np.clip(np.abs(d), 0, n_max - 1)
    else:
        raise Unsupported(f"model.positional.parameterization: {parameterization}")
    W = np.where(d[None] >= 0, w[:, idx], 0.0)  # [H, Lq, Lk]
    return np.einsum("hij,bhjd->bhid", W, v)


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

class Model:
    def __init__(self, cfg, params, buffers, ctx):
        m = cfg["model"]
        self.cfg, self.p, self.buffers = cfg, params, buffers
        self.type = m["type"]
        if self.type not in ("transformer_xl", "causal_lm", "transformer_lm"):
            raise Unsupported(f"model.type: {self.type}")
        self.L = int(m["num_layers"])
        self.H = int(m["num_heads"])
        self.d = int(m["model_dim"])
        self.norm = m.get("norm", "post")
        if self.norm not in ("post", "pre"):
            raise Unsupported(f"model.norm: {self.norm}")
        self.act = m.get("activation", "relu")
        self.stacked = m.get("head_combiner", "concat") == "stacked"
        if m.get("head_combiner", "concat") not in ("concat", "stacked"):
            raise Unsupported(f"model.head_combiner: {m.get('head_combiner')}")
        self.att = m.get("attention") or {}
        if isinstance(self.att, str):
            self.att = {"type": self.att}
        self.pos = m.get("positional") or {"type": "none"}
        if isinstance(self.pos, str):
            self.pos = {"type": self.pos}
        self.positions = m.get("positions", "none")
        self.recurrent = bool(m.get("recurrent_state", False))
        self.ctx = ctx
        att_type = self.att.get("type")
        if self.type == "transformer_xl" and att_type != "rel_xl":
            raise Unsupported(f"model.attention.type: {att_type} in transformer_xl")
        if att_type not in ("rel_xl", "softmax", "linear"):
            raise Unsupported(f"model.attention.type: {att_type}")
        if self.pos.get("type", "none") not in ("none", "fastrpb", "shaw", "skew", "sinspe",
                                                "convspe"):
            raise Unsupported(f"model.positional.type: {self.pos.get('type')}")
        if self.positions not in ("none", "learned", "sinusoidal"):
            raise Unsupported(f"model.positions: {self.positions}")
        # transformer_xl scales the embedding by sqrt(d), causal_lm and transformer_lm do not
        # (docs: "Language models").
        self.emb_scale = math.sqrt(self.d) if self.type == "transformer_xl" else 1.0
        self.final_norm = None
        for name in ("norm.weight", "final_norm.weight", "ln_f.weight", "final_ln.weight"):
            if name in params:
                self.final_norm = name[: -len("weight")]
        if "output.weight" in params:
            self.out_w = params["output.weight"]
        else:
            self.out_w = params["embedding.weight"]  # tie_weights
        self.fastrpb_n = None
        if self.pos.get("type") == "fastrpb":
            w = params["layers.0.attn.positional.weight"]
            par = self.pos.get("parameterization", "full")
            self.fastrpb_n = (w.shape[-1] + 1) // 2 if par == "full" else w.shape[-1]

    # -- one layer's attention ------------------------------------------------------------------
    def attention(self, i, xq, xkv, state):
        """xq [B, Lq, d] (the segment), xkv [B, Lk, d] ([memory; segment], both after the
        pre-norm if any) -> [B, Lq, d]."""
        p, pre, H = self.p, f"layers.{i}.attn.", self.H
        bias = lambda n: p.get(pre + n + ".bias")
        q = split_heads(linear(xq, p[pre + "q_proj.weight"], bias("q_proj")), H)
        k = split_heads(linear(xkv, p[pre + "k_proj.weight"], bias("k_proj")), H)
        v = split_heads(linear(xkv, p[pre + "v_proj.weight"], bias("v_proj")), H)
        Lq, Lk = xq.shape[1], xkv.shape[1]
        window = self.ctx["mem_len"] if self.ctx["same_length"] else None
        t = self.att["type"]
        if t == "rel_xl":
            dh = q.shape[-1]
            clamp = self.ctx["clamp_len"]
            dist = np.arange(Lk - 1, -1, -1)  # klen-1 ... 0 [TXL]
            if clamp and clamp > 0:
                dist = np.minimum(dist, clamp)
            R = sinusoid_table(dist, self.d)  # [Lk, d]
            r_k = linear(R, p[pre + "attention.r_net.weight"]).reshape(Lk, H, dh).transpose(1, 0, 2)
            if "r_w_bias" in p:
                u, vb = p["r_w_bias"], p["r_r_bias"]
            else:  # untie_r: a pair per layer (docs: "Transformer-XL")
                u, vb = p[pre + "attention.r_w_bias"], p[pre + "attention.r_r_bias"]
            y = rel_xl_attention(q, k, v, r_k, u, vb, window)
        else:
            ptype, table = self.pos.get("type", "none"), p.get(pre + "positional.weight")
            if ptype in ("sinspe", "convspe"):  # q, k rewritten into R features (docs: SPE)
                q, k = spe_rewrite(self.pos, p, pre + "positional", q, k,
                                   np.arange(Lk - Lq, Lk), self.ctx["dtype"])
            if ptype == "shaw":
                win = {"k": int(self.pos.get("window", 16)), "Lk": Lk}
                rel = lambda x: shaw_scores(x, table, win)
            elif ptype == "skew":
                rel = lambda x: skew_scores(x, table, Lk)
            else:
                rel = None
            if t == "softmax":
                y = softmax_attention(q, k, v, window, None if rel is None else rel(q))
            else:
                att = dict(self.att)
                if att.get("feature_map") == "performer":
                    att["_proj"] = self.buffers[pre + "attention.feature_map.projection"].astype(np.float64)
                if att.get("feature_map") == "cosformer":
                    att["_cos_len"] = float(att.get("cosformer_len") or self.ctx["cos_len"])
                y = linear_attention(q, k, v, att, window, state, rel)
        if self.fastrpb_n is not None:
            y = y + fastrpb_term(v, p[pre + "positional.weight"],
                                 self.pos.get("parameterization", "full"), self.fastrpb_n, Lq)
        if self.stacked:  # docs "head_combiner: stacked": token entry e * outputs + o
            h1 = np.tanh(y.transpose(0, 2, 3, 1) @ p[pre + "combiner.w_h.weight"].T)
            h2 = np.tanh(h1 @ p[pre + "combiner.w_o.weight"].T)  # [B, Lq, dh, outputs]
            return h2.reshape(h2.shape[0], h2.shape[1], -1)
        return linear(merge_heads(y), p[pre + "out_proj.weight"], bias("out_proj"))

    # -- one segment ----------------------------------------------------------------------------
    def forward(self, ids, mems, states):
        """ids [B, Lq]; mems: per layer [B, M, d] (the layer's input at earlier positions);
        states: per layer running sums (recurrent_state) or None.
        -> log-probabilities [B, Lq, V], the new mems."""
        p = self.p
        h = p["embedding.weight"][ids] * self.emb_scale  # [B, Lq, d]
        if self.positions == "learned":
            name = next((n for n in ("position.weight", "positions.weight", "position_embedding.weight",
                                     "pos_embedding.weight") if n in p), None)
            if name is None:
                raise Unsupported("model.positions: learned table not found in params")
            h = h + p[name][: ids.shape[1]]  # positions restart every segment
        elif self.positions == "sinusoidal":
            h = h + absolute_sinusoid(ids.shape[1], self.d)
        new_mems = []
        for i in range(self.L):
            mem = mems[i]
            new_mems.append(self.keep_memory(mem, h))
            cat = h if mem is None or mem.shape[1] == 0 else np.concatenate([mem, h], 1)
            pre = f"layers.{i}."
            if self.norm == "post":
                a = self.attention(i, h, cat, states[i])
                h = layer_norm(h + a, p[pre + "ln1.weight"], p[pre + "ln1.bias"])
                h = layer_norm(h + mlp(h, p, pre + "mlp.", self.act),
                               p[pre + "ln2.weight"], p[pre + "ln2.bias"])
            else:
                ln = lambda x: layer_norm(x, p[pre + "ln1.weight"], p[pre + "ln1.bias"])
                h = h + self.attention(i, ln(h), ln(cat), states[i])
                h = h + mlp(layer_norm(h, p[pre + "ln2.weight"], p[pre + "ln2.bias"]), p,
                            pre + "mlp.", self.act)
        if self.final_norm is not None:
            h = layer_norm(h, p[self.final_norm + "weight"], p[self.final_norm + "bias"])
        logits = linear(h, self.out_w, p.get("output.bias"))
        logits = logits - logits.max(-1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return logp, new_mems

    def keep_memory(self, mem, h):
        """The layer's input at the last mem_len positions of [memory; segment]."""
        M = self.ctx["mem_len"]
        if M <= 0:
            return None
        cat = h if mem is None else np.concatenate([mem, h], 1)
        return cat[:, -M:]


# ----------------------------------------------------------------------------------------------
# The evaluation stream (docs/language-models.md "Data, training, evaluation")
# ----------------------------------------------------------------------------------------------

def evaluate(model, ids, rows, tgt_len, layout):
    """log p of every scored target, in stream order.
    relpos layout: n = (N-1) // rows targets per row, row b = ids[b n .. (b+1) n] (rows share
    their boundary), read in segments of tgt_len with memory carried; the (N-1) mod rows ids
    after the rows are a tail continuing the last row with its memory, in segments of tgt_len.
    reference layout: m = N // rows, row b = ids[b m .. (b+1) m), the rest dropped."""
    N = len(ids)
    if layout == "relpos":
        n = (N - 1) // rows
        stride, row_targets = n, n
    elif layout == "reference":
        m = N // rows
        stride, row_targets = m, m - 1
    else:
        raise Unsupported(f"eval.layout: {layout}")
    total = N - 1 if layout == "relpos" else rows * row_targets
    out = np.full(total, np.nan)
    X = np.stack([ids[b * stride: b * stride + row_targets + 1] for b in range(rows)])  # [B, n+1]
    mems = [None] * model.L
    states = [{"S": None, "z": None} if model.recurrent else None for _ in range(model.L)]
    for t in range(0, row_targets, tgt_len):
        L = min(tgt_len, row_targets - t)
        inp, tgt = X[:, t:t + L], X[:, t + 1:t + L + 1]
        logp, mems = model.forward(inp, mems, states)
        lp = np.take_along_axis(logp, tgt[..., None], -1)[..., 0]  # [B, L]
        for b in range(rows):
            out[b * row_targets + t: b * row_targets + t + L] = lp[b]
    T = N - 1 - rows * row_targets if layout == "relpos" else 0
    if T > 0:  # the tail: the last row continued, in segments of tgt_len
        mem1 = [None if mm is None else mm[-1:] for mm in mems]
        st1 = [None if s is None else {"S": s["S"][-1:], "z": s["z"][-1:]} for s in states]
        for start in range(rows * row_targets, N - 1, tgt_len):
            L = min(tgt_len, N - 1 - start)
            inp, tgt = ids[start:start + L][None], ids[start + 1:start + L + 1][None]
            logp, mem1 = model.forward(inp, mem1, st1)
            out[start:start + L] = np.take_along_axis(logp, tgt[..., None], -1)[0, :, 0]
    targets = np.concatenate([X[b, 1:row_targets + 1] for b in range(rows)] +
                             ([ids[rows * row_targets + 1:]] if T > 0 else []))
    return out, targets


def trained_max_len(cfg):
    """model.max_len, or the longest [memory; segment] of the stored training and evaluation
    settings (train/task.cpp complete_model_config)."""
    m, data, ev = cfg["model"], cfg["data"], cfg.get("eval") or {}
    if m.get("max_len"):
        return int(m["max_len"])
    mem, tgt = int(m.get("mem_len") or 0), int(data["tgt_len"])
    eval_mem = ev.get("mem_len") if ev.get("mem_len") is not None else mem
    eval_tgt = ev.get("tgt_len") if ev.get("tgt_len") is not None else tgt
    return max(mem + tgt, int(eval_mem) + int(eval_tgt))


F32_TOL, F64_TOL = 1e-4, 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("predictions")
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--split", default="test", choices=["train", "val", "test"])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="the same overrides given to relpos eval (eval.mem_len, ...)")
    ap.add_argument("--tol", type=float, default=None,
                    help=f"abs tolerance (default {F32_TOL:g} for f32 models, {F64_TOL:g} f64)")
    ap.add_argument("--show", type=int, default=0, help="print the N worst positions")
    args = ap.parse_args()

    cfg, params, buffers, vocab = load_checkpoint(args.checkpoint)
    trained_len = trained_max_len(cfg)  # before the --set overrides: a checkpoint keeps it
    for kv in args.set:
        k, _, v = kv.partition("=")
        set_key(cfg, k, yaml.safe_load(v))
    try:
        m, data, ev = cfg["model"], cfg["data"], cfg.get("eval") or {}
        if cfg.get("train", {}).get("precision", "f32") != "f32":
            raise Unsupported(f"train.precision: {cfg['train']['precision']}")
        pick = lambda key, default: ev.get(key) if ev.get(key) is not None else default
        ctx = {
            # cosformer_len's default: the model's max_len as its training resolved it, whatever
            # the eval overrides.
            "cos_len": float(trained_len),
            "mem_len": int(pick("mem_len", m.get("mem_len") or 0)),
            "clamp_len": int(pick("clamp_len", m.get("clamp_len") or 0)),
            "same_length": bool(pick("same_length", m.get("same_length", False))),
            "dtype": np.float64 if m.get("dtype") == "f64" else np.float32,  # SPE's noise
        }
        model = Model(cfg, params, buffers, ctx)
        rows = int(data.get("eval_batch_size") or 0) or int(data["batch_size"])
        tgt_len = int(pick("tgt_len", data["tgt_len"]))
        ids = read_ids(args.data_dir, args.split, vocab)
        ref, targets = evaluate(model, ids, rows, tgt_len, ev.get("layout", "relpos"))
    except Unsupported as e:
        print(f"unsupported: {e}")
        return 2

    with h5py.File(args.predictions, "r") as f:
        got = np.asarray(f["log_prob"][()], dtype=np.float64)
        got_t = np.asarray(f["targets"][()])
    if got.shape != ref.shape or not np.array_equal(got_t, targets):
        print(f"shape/targets differ: relpos {got.shape}, reference {ref.shape}; "
              f"targets equal: {got.shape == ref.shape and np.array_equal(got_t, targets)}")
        return 1
    diff = np.abs(got - ref)
    worst = int(np.argmax(diff))
    # An f64 model's log_prob is written in f64 (docs: "LM data layout and evaluation").
    tol = args.tol if args.tol is not None else F64_TOL if m.get("dtype") == "f64" else F32_TOL
    ok, what = diff.max() <= tol, f"tol {tol:g}"
    print(f"{m['type']} n={len(ref)} max|dlog_prob|={diff.max():.3e} at {worst} "
          f"(relpos {got[worst]:.6f}, reference {ref[worst]:.6f}); mean nll relpos "
          f"{-got.mean():.6f} reference {-ref.mean():.6f}; {what}")
    for k in np.argsort(-diff)[: args.show]:
        print(f"  {k}: relpos {got[k]:.6f} reference {ref[k]:.6f} diff {diff[k]:.3e}")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:  # a file that is missing or not HDF5 / text: one line, exit 2
        print(f"reference_lm: cannot read the inputs: {e}", file=sys.stderr)
        sys.exit(2)
