#!/usr/bin/python3
"""tools/plots.py: the FastRPB paper's figures (seed 002, Figures 1-3) and training curves,
drawn from relpos outputs: `relpos bench attention --json`, checkpoints (HDF5, /params/<name>)
and run directories (metrics.jsonl). It needs matplotlib (`apt-get install python3-matplotlib`),
numpy and, for checkpoints, h5py. Every subcommand writes one PNG.

  plots.py figure3 OUT.png BENCH.json              time and peak memory vs sequence length
  plots.py figure1 OUT.png CKPT[:LABEL] ...        learned 1-D FastRPB weights w vs distance
  plots.py figure2 OUT.png CKPT [--pixel R,C]      learned 2-D FastRPB map for one pixel
  plots.py curves OUT.png RUN_DIR[:LABEL] ...      training loss and validation metric vs step
  plots.py lm-memory OUT.png TABLE.csv             test bpc vs evaluation memory (reproduce lm)

Every subcommand takes the PNG to write first, then what it draws from.

User errors print one line "plots: ..." and exit 2; a missing matplotlib exits 3.
"""
import argparse
import json
import os
import re
import sys


class UserError(Exception):
    """A problem with the inputs: reported as one line, exit status 2."""


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        print("plots: matplotlib is missing; install it with: "
              "apt-get install python3-matplotlib", file=sys.stderr)
        sys.exit(3)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def split_label(arg):
    """'PATH:LABEL' -> (PATH, LABEL); a PATH that exists as given keeps any ':' it holds."""
    if os.path.exists(arg) or ":" not in arg:
        return arg, os.path.basename(os.path.normpath(arg))
    path, label = arg.rsplit(":", 1)
    return path, label or os.path.basename(os.path.normpath(path))


def parse_pair(text, what):
    m = re.fullmatch(r"\s*(-?\d+)\s*,\s*(-?\d+)\s*", text)
    if not m:
        raise UserError(f"{what} must be two integers A,B, got '{text}'")
    return int(m.group(1)), int(m.group(2))


def save(fig, out):
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


# ---------------------------------------------------------------------------------------------
# Checkpoints: the FastRPB weight and the config stored beside it.

def read_config(h5file):
    """The resolved config (YAML text in the root attribute 'config') as a dict, or {}."""
    text = h5file.attrs.get("config")
    if text is None:
        return {}
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        import yaml
        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError:
            return {}
        return config if isinstance(config, dict) else {}
    except ImportError:  # no PyYAML: read model.positional's few keys used here
        chunk = yaml_value(text, "positional")
        if chunk is None:
            return {}
        if ":" not in chunk:  # a scalar: `positional: none`
            return {"model": {"positional": chunk.strip()}}
        positional = {}
        m = re.search(r"grid:\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]", chunk) or \
            re.search(r"grid:\s*\n\s*-\s*(\d+)\s*\n\s*-\s*(\d+)", chunk)
        if m:
            positional["grid"] = [int(m.group(1)), int(m.group(2))]
        for key in ("parameterization", "type"):
            m = re.search(rf"\b{key}:\s*(\w+)", chunk)
            if m:
                positional[key] = m.group(1)
        return {"model": {"positional": positional}}


def yaml_value(text, key):
    """The YAML text under the first `key:` (its inline value or its indented block), or None."""
    m = re.search(rf"^( *){key}:[ \t]*(.*)$", text, re.M)
    if not m:
        return None
    if m.group(2).strip():
        return m.group(2)
    block = []
    for line in text[m.end():].splitlines()[1:]:
        if line.strip() and len(line) - len(line.lstrip(" ")) <= len(m.group(1)):
            break
        block.append(line)
    return "\n".join(block)


def positional_config(config):
    positional = (config.get("model") or {}).get("positional")
    if isinstance(positional, str):  # `positional: none`
        return {"type": positional}
    return positional or {}


def layer_order(name):
    m = re.search(r"layers\.(\d+)\.", name)
    return (int(m.group(1)) if m else -1, name)


def read_positional_weight(path, param=None, want_type=None):
    """(weight [H, K] numpy array, its dataset name, positional config dict) of the first layer."""
    try:
        import h5py
    except ImportError:
        raise UserError("h5py is missing; install it with: apt-get install python3-h5py")
    if not os.path.isfile(path):
        raise UserError(f"'{path}': no such checkpoint file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise UserError(f"'{path}' is not a readable HDF5 checkpoint: {e}")
    with f:
        if "params" not in f:
            raise UserError(f"'{path}' has no /params group: not a relpos checkpoint")
        names = sorted(f["params"].keys(), key=layer_order)
        if param is None:
            found = [n for n in names if n.endswith("positional.weight")]
            if not found:
                raise UserError(f"'{path}' has no FastRPB weight (no /params/*positional.weight "
                                f"among its {len(names)} parameters)")
            param = found[0]  # the first layer's (sorted by layer index)
        elif param not in f["params"]:
            raise UserError(f"'{path}' has no /params/{param}")
        weight = f["params"][param][()]
        pos = positional_config(read_config(f))
    kind = pos.get("type")
    if want_type and kind and kind not in want_type:
        raise UserError(f"'{path}': /params/{param} belongs to positional type '{kind}', "
                        f"not {' or '.join(want_type)}")
    if weight.ndim != 2:
        raise UserError(f"'{path}': /params/{param} has shape {list(weight.shape)}, "
                        f"expected [heads, 2N-1] or [heads, N]")
    return weight, param, pos


def full_weights(weight, symmetric):
    """[H, 2N-1] with column k the weight of d = i - j = k - (N-1) (layers/attention/toeplitz.h)."""
    import numpy as np
    if not symmetric:
        return weight
    n = weight.shape[1]  # column k <-> |d| = k
    return weight[:, np.abs(np.arange(-(n - 1), n))]


def is_symmetric(weight, pos, override):
    choice = override or pos.get("parameterization")
    if choice is None and pos.get("type"):
        choice = "full"  # relpos's default (layers/attention/toeplitz.h)
    elif choice is None:  # no config: [H, 2N-1] has an odd width, [H, N] may not
        choice = "full" if weight.shape[1] % 2 == 1 else "symmetric"
    if choice not in ("full", "symmetric"):
        raise UserError(f"parameterization must be full or symmetric, got '{choice}'")
    return choice == "symmetric"


# ---------------------------------------------------------------------------------------------
# figure1: learned 1-D weights vs distance (paper Figure 1).

def figure1(args, plt):
    import numpy as np
    panels = args.separate and len(args.checkpoints) > 1
    rows = len(args.checkpoints) if panels else 1
    fig, axes = plt.subplots(rows, 1, figsize=(8, 3.2 * rows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, arg in enumerate(args.checkpoints):
        path, label = split_label(arg)
        weight, name, pos = read_positional_weight(path, args.param, ("fastrpb", "fastrpb2d"))
        symmetric = is_symmetric(weight, pos, args.parameterization)
        w = full_weights(weight.astype(np.float64), symmetric)  # [H, 2N-1]
        n = (w.shape[1] + 1) // 2
        d = np.arange(-(n - 1), n)  # relpos: d = i - j (query - key)
        x = -d if args.convention == "paper" else d  # paper: m - n = key - query
        order = np.argsort(x)
        ax = axes[i if panels else 0][0]
        color = colors[i % len(colors)]
        if not args.no_heads:
            for h in range(w.shape[0]):
                ax.plot(x[order], w[h, order], color=color, lw=0.4, alpha=0.35)
        ax.plot(x[order], w.mean(axis=0)[order], color=color, lw=1.6,
                label=f"{label} (mean of {w.shape[0]} heads, N = {n})")
        print(f"{path}: /params/{name} {list(weight.shape)}")
    xlabel = ("distance j - i (key - query position; the paper's m - n)"
              if args.convention == "paper" else "distance i - j (query - key position)")
    for row in axes:
        ax = row[0]
        ax.axhline(0, color="gray", lw=0.5)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("FastRPB weight w")
        ax.legend(fontsize=8)
    axes[0][0].set_title("Learned FastRPB 1-D weights, first layer" +
                         ("" if args.no_heads else " (thin: single heads)"))
    save(fig, args.out)


# ---------------------------------------------------------------------------------------------
# figure2: learned 2-D map for one pixel (paper Figure 2).

def figure2(args, plt):
    import numpy as np
    weight, name, pos = read_positional_weight(args.checkpoint, args.param, ("fastrpb2d",))
    if args.grid:
        rows, cols = parse_pair(args.grid, "--grid")
    elif isinstance(pos.get("grid"), list) and len(pos["grid"]) == 2:
        rows, cols = (int(v) for v in pos["grid"])
    else:
        raise UserError(f"'{args.checkpoint}' has no model.positional.grid in its config; "
                        f"give --grid ROWS,COLS")
    if rows <= 0 or cols <= 0:
        raise UserError(f"the grid must be positive, got {rows}x{cols}")
    r0, c0 = parse_pair(args.pixel, "--pixel")
    if not (0 <= r0 < rows and 0 <= c0 < cols):
        raise UserError(f"--pixel {r0},{c0} is outside the {rows}x{cols} grid")
    n = max(rows, cols)
    symmetric = is_symmetric(weight, pos, args.parameterization)
    width = n if symmetric else 2 * n - 1
    if weight.shape[1] != width:
        raise UserError(f"/params/{name} has shape {list(weight.shape)}; a "
                        f"{'symmetric' if symmetric else 'full'} weight for the grid {rows}x{cols} "
                        f"has [heads, {width}]")
    w = full_weights(weight.astype(np.float64), symmetric)  # [H, 2n-1], column d + n - 1
    if args.head is not None and not 0 <= args.head < w.shape[0]:
        raise UserError(f"--head {args.head}: the weight has {w.shape[0]} heads")
    t = w.mean(axis=0) if args.head is None else w[args.head]
    # b[r, c] = t(r - R) + t(c - C): W2d[(r, c), (R, C)], as layers/attention/fastrpb2d.cpp.
    b = t[np.arange(rows)[:, None] - r0 + n - 1] + t[np.arange(cols)[None, :] - c0 + n - 1]
    fig, ax = plt.subplots(figsize=(5.6, 4.8))
    image = ax.imshow(b, cmap="viridis", origin="upper")
    fig.colorbar(image, ax=ax, label="t(r - R) + t(c - C)")
    ax.plot([c0], [r0], marker="x", color="red", ms=8, mew=2)
    who = "mean over heads" if args.head is None else f"head {args.head}"
    ax.set_title(f"FastRPB 2-D weights from pixel ({r0}, {c0})\n{who}, {rows}x{cols} grid",
                 fontsize=10)
    ax.set_xlabel("column c")
    ax.set_ylabel("row r")
    print(f"{args.checkpoint}: /params/{name} {list(weight.shape)}, grid {rows}x{cols}")
    save(fig, args.out)


# ---------------------------------------------------------------------------------------------
# figure3: time and memory vs length from `relpos bench attention --json` (paper Figure 3).

def read_bench(path):
    """(header dict, result dicts); also takes one JSON result per line (relpos_bench_attention)."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise UserError(f"cannot read '{path}': {e.strerror}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as e:
            raise UserError(f"'{path}' is not JSON: {e}")
    if isinstance(data, dict):
        header, results = data, data.get("results")
    else:
        header, results = {}, data
    if not isinstance(results, list) or not results:
        raise UserError(f"'{path}' holds no results (expected {{\"results\": [...]}})")
    rows = []
    for i, r in enumerate(results):
        variant, length = r.get("variant"), r.get("length", r.get("n"))
        if variant is None or length is None:
            raise UserError(f"'{path}': result {i} lacks 'variant' or 'length'")
        if r.get("skipped"):  # not run at this length (not buildable, or over a size limit)
            continue
        rows.append({"variant": variant, "length": int(length), "oom": bool(r.get("oom", False)),
                     "forward_ms": r.get("forward_ms"),
                     "forward_backward_ms": r.get("forward_backward_ms", r.get("median_ms")),
                     "peak_bytes": r.get("peak_bytes")})
    return header, rows


def figure3(args, plt):
    from matplotlib.ticker import NullLocator
    header, rows = read_bench(args.bench)
    key = "forward_backward_ms" if args.time == "forward_backward" else "forward_ms"
    measured = [r for r in rows if not r["oom"]]
    if measured and all(r[key] is None for r in measured):
        raise UserError(f"'{args.bench}' has no {key} values (try --time "
                        f"{'forward' if key == 'forward_backward_ms' else 'forward_backward'})")
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "os^vD<>phP*X"
    oom_labelled = False
    for i, v in enumerate(variants):
        pts = sorted((r for r in rows if r["variant"] == v), key=lambda r: r["length"])
        style = dict(color=colors[i % len(colors)], marker=markers[i % len(markers)], ms=4)
        ok = [r for r in pts if not r["oom"]]
        t = [(r["length"], r[key]) for r in ok if r[key] is not None]
        m = [(r["length"], r["peak_bytes"] / 2**20) for r in ok if r["peak_bytes"] is not None]
        if t:
            ax_t.plot(*zip(*t), label=v, **style)
        if m:
            ax_m.plot(*zip(*m), label=v, **style)
        for r in pts:
            if not r["oom"]:
                continue
            for ax in (ax_t, ax_m):  # an x on the top edge at the length that ran out of memory
                ax.plot([r["length"]], [0.97], transform=ax.get_xaxis_transform(), marker="x",
                        color=style["color"], ms=8, mew=2, clip_on=False,
                        label=None if oom_labelled else "out of memory")
            oom_labelled = True
    lengths = sorted({r["length"] for r in rows})
    for ax in (ax_t, ax_m):
        if lengths[-1] >= 4 * lengths[0]:
            ax.set_xscale("log", base=2)
        ax.set_xticks(lengths)
        ax.set_xticklabels([str(n) for n in lengths], rotation=45, fontsize=8)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("sequence length N")
        ax.grid(alpha=0.3)
    ax_m.set_yscale("log")
    ax_t.set_ylabel(f"{'forward + backward' if key == 'forward_backward_ms' else 'forward'} ms")
    ax_m.set_ylabel("peak memory, MB (log scale)")
    ax_t.legend(fontsize=7)
    setup = ", ".join(f"{k} {header[k]}" for k in ("device", "batch", "heads", "dim", "threads")
                      if k in header)
    fig.suptitle("Attention time and memory" + (f" ({setup})" if setup else ""), fontsize=10)
    save(fig, args.out)


# ---------------------------------------------------------------------------------------------
# curves: training loss and validation metric from metrics.jsonl.

def run_metric(run_dir, requested):
    if requested != "auto":
        return requested
    try:
        with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
            return json.load(f).get("metric", "accuracy")
    except (OSError, ValueError):
        pass
    try:  # a run still going has no summary.json yet: its config's train.metric
        text = open(os.path.join(run_dir, "config.yaml"), encoding="utf-8").read()
        m = re.search(r"\bmetric:\s*(\w+)", yaml_value(text, "train") or "")
        if m:
            return m.group(1)
    except OSError:
        pass
    return "accuracy"


def read_metrics(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        raise UserError(f"'{run_dir}' has no metrics.jsonl: not a relpos run directory")
    events = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{i}: not JSON: {e}")
    return events


def curves(args, plt):
    fig, (ax_l, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    metrics = set()
    for i, arg in enumerate(args.runs):
        run_dir, label = split_label(arg)
        events = read_metrics(run_dir)
        metric = run_metric(run_dir, args.metric)
        metrics.add(metric)
        train = [(e["step"], e["loss"]) for e in events
                 if e.get("event") == "train" and e.get("loss") is not None]
        val = [(e["step"], e[metric]) for e in events
               if e.get("event") == "eval" and e.get(metric) is not None]
        if not train and not val:
            raise UserError(f"'{run_dir}/metrics.jsonl' has no train or eval events")
        color = colors[i % len(colors)]
        style = ["-", "--", ":"][(i // len(colors)) % 3]  # more runs than colors
        if train:
            ax_l.plot(*zip(*train), color=color, ls=style, lw=1.2, label=label)
        if val:
            ax_m.plot(*zip(*val), color=color, ls=style, marker="o", ms=3, lw=1.2, label=label)
        print(f"{run_dir}: {len(train)} train and {len(val)} eval events, metric {metric}")
    ax_l.set_ylabel("training loss")
    ax_m.set_ylabel("validation " + " / ".join(sorted(metrics)))
    for ax in (ax_l, ax_m):
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    if len(args.runs) > 8:  # one legend beside the plots, where it hides no curve
        fig.set_size_inches(14, 4.8)
        ax_m.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        for ax in (ax_l, ax_m):
            ax.legend(fontsize=8)
    save(fig, args.out)


def lm_memory(args, plt):
    """Each model's test bpc at 1x, 2x and 4x its training memory (mean, error bars: the std over
    seeds), from `relpos reproduce lm`'s table.csv; a model without a memory is one dashed level,
    and a model that cannot take a longer memory keeps the points it has."""
    import csv
    try:
        rows = list(csv.DictReader(open(args.table)))
    except OSError as e:
        raise UserError(f"cannot read '{args.table}': {e.strerror}")
    needed = {"model", "mem_len", "bpc_1x_mean", "bpc_1x_std", "bpc_2x_mean", "bpc_4x_mean"}
    if not rows or not needed <= set(rows[0]):
        raise UserError(f"'{args.table}' is not a table.csv of `relpos reproduce lm`")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = 0
    for row in rows:
        points = [(m, float(row[f"bpc_{m}x_mean"]), float(row[f"bpc_{m}x_std"] or 0))
                  for m in (1, 2, 4) if row.get(f"bpc_{m}x_mean")]
        if not points:
            continue
        drawn += 1
        if row["mem_len"] == "0":  # no memory: the same context at every multiple
            ax.axhline(points[0][1], ls="--", lw=1.0, color=f"C{drawn % 10}",
                       label=f"{row['model']} (no memory to lengthen)")
            continue
        x, y, err = zip(*points)
        ax.errorbar(x, y, yerr=err, marker="o", ms=4, lw=1.4, capsize=3, color=f"C{drawn % 10}",
                    label=f"{row['model']} (memory {row['mem_len']})")
    if drawn == 0:
        raise UserError(f"'{args.table}' has no evaluated cell")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4], ["1x", "2x", "4x"])
    ax.set_xlabel("evaluation memory (multiple of the training memory)")
    ax.set_ylabel("test bits per character")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, args.out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="plots.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    f3 = sub.add_parser("figure3", help="time and peak memory vs length (relpos bench attention)")
    f3.add_argument("out", metavar="OUT.png")
    f3.add_argument("bench", metavar="BENCH.json")
    f3.add_argument("--time", choices=["forward_backward", "forward"], default="forward_backward",
                    help="which time to plot (default forward_backward)")

    f1 = sub.add_parser("figure1", help="learned 1-D FastRPB weights vs distance")
    f1.add_argument("out", metavar="OUT.png")
    f1.add_argument("checkpoints", metavar="CHECKPOINT[:LABEL]", nargs="+")
    f1.add_argument("--param", help="the /params dataset to plot (default: the first layer's "
                                    "*positional.weight)")
    f1.add_argument("--parameterization", choices=["full", "symmetric"],
                    help="default: the checkpoint config's model.positional.parameterization")
    f1.add_argument("--convention", choices=["paper", "relpos"], default="paper",
                    help="x axis: paper = key - query (m - n, as Figure 1), relpos = query - key")
    f1.add_argument("--no-heads", action="store_true", help="draw only the mean over heads")
    f1.add_argument("--separate", action="store_true", help="one panel per checkpoint")

    f2 = sub.add_parser("figure2", help="learned 2-D FastRPB map for one pixel")
    f2.add_argument("out", metavar="OUT.png")
    f2.add_argument("checkpoint", metavar="CHECKPOINT")
    f2.add_argument("--pixel", default="12,10", help="R,C (default 12,10 as the paper)")
    f2.add_argument("--grid", help="ROWS,COLS (default: model.positional.grid of the config)")
    f2.add_argument("--param", help="the /params dataset (default: the first layer's)")
    f2.add_argument("--parameterization", choices=["full", "symmetric"])
    f2.add_argument("--head", type=int, help="one head instead of the mean over heads")

    cu = sub.add_parser("curves", help="training loss and validation metric vs step")
    cu.add_argument("out", metavar="OUT.png")
    cu.add_argument("runs", metavar="RUN_DIR[:LABEL]", nargs="+")
    cu.add_argument("--metric", default="auto",
                    choices=["auto", "accuracy", "macro_f1", "loss"],
                    help="validation metric (default: the run's train.metric)")

    lm = sub.add_parser("lm-memory", help="test bpc vs evaluation memory (relpos reproduce lm)")
    lm.add_argument("out", metavar="OUT.png")
    lm.add_argument("table", metavar="TABLE.csv")

    args = p.parse_args(argv)
    plt = import_pyplot()
    command = {"figure1": figure1, "figure2": figure2, "figure3": figure3, "curves": curves,
               "lm-memory": lm_memory}
    try:
        command[args.command](args, plt)
    except UserError as e:
        print(f"plots: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
