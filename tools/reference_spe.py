"""Stochastic positional encoding at evaluation (sinspe, convspe) and the Philox normal draws it
reads, in numpy float64, written from docs/model-details.md ("Stochastic positional encoding",
"Random numbers"); shared by tools/reference_classifier.py and tools/reference_lm.py.
"""
import numpy as np

_MASK = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85


def philox_blocks(seed, blocks):
    """Philox4x32-10 of the counters `blocks` (uint64 array) under `seed` -> four uint64 arrays,
    the block's 32-bit words."""
    c0 = blocks & _MASK
    c1 = blocks >> np.uint64(32)
    c2 = np.zeros_like(blocks)
    c3 = np.zeros_like(blocks)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = _M0 * c0, _M1 * c2  # 32 x 32 bits: exact in uint64
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & _MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & _MASK)
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return c0, c1, c2, c3


class Generator:
    """A seed and an offset in blocks; each draw advances the offset by the blocks it used."""

    def __init__(self, seed, offset=0):
        self.seed, self.offset = int(seed), int(offset)

    def randn(self, shape, std, dtype):
        """std * N(0, 1) of `shape` (row-major), rounded to `dtype`, returned as float64."""
        n = int(np.prod(shape))
        i = np.arange(n, dtype=np.uint64)
        words = philox_blocks(self.seed, np.uint64(self.offset) + i // np.uint64(2))
        self.offset += (n + 1) // 2
        odd = (i % np.uint64(2)).astype(bool)
        w_a = np.where(odd, words[2], words[0]).astype(np.float64)
        w_b = np.where(odd, words[3], words[1]).astype(np.float64)
        u1 = 1.0 - w_a / 4294967296.0
        u2 = w_b / 4294967296.0
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
        return (std * z).astype(dtype).astype(np.float64).reshape(shape)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _sine_codes(p, name, z, positions, scale):
    """sinspe: Q̄, K̄ [H, L, D, R] at `positions` [L] from the code noise z [H, D, 2K, R]."""
    freqs, offsets, gains = (p[name + s] for s in (".freqs", ".offsets", ".gains"))  # [H, D, K]
    sines = freqs.shape[2]
    omega = np.pi * _sigmoid(freqs)
    gamma = np.logaddexp(0.0, gains)
    mix_cos = gamma[..., None] * z[:, :, :sines] * scale  # [H, D, K, R]
    mix_sin = gamma[..., None] * z[:, :, sines:] * scale
    angle = omega[..., None] * positions  # [H, D, K, L]

    def code(a):
        return (np.einsum("hdkl,hdkr->hldr", np.cos(a), mix_cos)
                + np.einsum("hdkl,hdkr->hldr", np.sin(a), mix_sin))

    return code(angle + offsets[..., None]), code(angle)


def _conv_codes(weight, z, rows, cols, heads, scale):
    """convspe: one of Q̄, K̄ [H, rows*cols, D, R] from z [H, D, R, samples] and the filters
    [H*D, 1, k] or [H*D, 1, k, k]."""
    dim, reals = z.shape[1], z.shape[2]
    w = weight.reshape(heads, dim, *weight.shape[2:]) * scale
    if w.ndim == 3:  # 1-D: Q̄[l] = s Σ_t w[t] z[l + t]
        k = w.shape[2]
        bar = sum(w[:, :, t, None, None] * z[:, :, :, t:t + cols] for t in range(k))  # [H, D, R, L]
    else:  # 2-D on the noise image of (rows + k - 1) x (cols + k - 1) samples
        k = w.shape[2]
        img = z.reshape(heads, dim, reals, rows + k - 1, cols + k - 1)
        bar = sum(w[:, :, t, u, None, None, None] * img[:, :, :, t:t + rows, u:u + cols]
                  for t in range(k) for u in range(k)).reshape(heads, dim, reals, rows * cols)
    return bar.transpose(0, 3, 1, 2)  # [H, L, D, R]


def spe_rewrite(pos, p, name, qh, kh, q_positions, dtype):
    """qh [..., H, Lq, D], kh [..., H, Lk, D] -> q̂ [..., H, Lq, R], k̂ [..., H, Lk, R] for the
    encoding `pos` (its options) whose parameters are `name`.* in `p`; queries at q_positions
    [Lq], key j at j; the leading dims (a batch) share the noise."""
    heads, dim = qh.shape[-3], qh.shape[-1]
    reals = int(pos.get("num_realizations", 64))
    scale = (reals * dim) ** -0.25
    gen = Generator(int(pos.get("eval_seed", 0)))
    gated = bool(pos.get("gated", True))
    gate_noise = gen.randn((heads, dim, reals), scale, dtype) if gated else None
    lk = kh.shape[-2]
    span = max(lk, int(q_positions[-1]) + 1 if len(q_positions) else 0)  # positions 0 .. span - 1
    if pos["type"] == "sinspe":
        sines = int(pos.get("num_sines", 10))
        z = gen.randn((heads, dim, 2 * sines, reals), 1.0 / np.sqrt(2.0 * sines), dtype)
        qbar, kbar = _sine_codes(p, name, z, np.arange(span, dtype=np.float64), scale)
    else:
        k = int(pos.get("kernel_size", 128))
        grid = list(pos.get("grid") or [])
        rows, cols = grid if grid else (1, span)
        kh_rows = k if grid else 1
        samples = (rows + kh_rows - 1) * (cols + k - 1)
        z = gen.randn((samples, heads, dim, reals), 1.0, dtype).transpose(1, 2, 3, 0)
        w_q = p[name + ".conv_q.weight"]
        w_k = p.get(name + ".conv_k.weight", w_q)  # shared: conv_q serves both
        qbar = _conv_codes(w_q, z, rows, cols, heads, scale)
        kbar = _conv_codes(w_k, z, rows, cols, heads, scale)
    qbar, kbar = qbar[:, q_positions], kbar[:, :lk]

    def rewrite(x, bar):
        if not gated:
            return np.einsum("...hld,hldr->...hlr", x, bar)
        g = p[name + ".gate"]  # [H, D]
        keep, blend = np.sqrt(_sigmoid(-g)), np.sqrt(_sigmoid(g))
        return (np.einsum("...hld,hldr->...hlr", x * keep[:, None], bar)
                + np.einsum("...hld,hdr->...hlr", x * blend[:, None], gate_noise))

    return rewrite(qh, qbar), rewrite(kh, kbar)
