#!/usr/bin/env bash
# tools/plots.py end to end on synthetic inputs: a tiny HDF5 checkpoint per FastRPB kind (h5py,
# a /params group and the YAML "config" attribute as relpos writes them), a fake
# `relpos bench attention --json` output and a fake run directory. It runs every subcommand,
# checks that each PNG exists and starts with the PNG signature, and checks the user errors
# (exit 2, one line) and a missing matplotlib (exit 3). Without matplotlib: SKIPPED, exit 0.
# Usage: test_plots.sh [PYTHON]   (default /usr/bin/python3)
set -uo pipefail
python=${1:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
plots=$here/../../tools/plots.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

if ! "$python" -c "import matplotlib" 2>/dev/null; then
  echo "SKIPPED: no matplotlib"
  exit 0
fi
if ! "$python" -c "import h5py, numpy" 2>/dev/null; then
  echo "SKIPPED: no h5py or numpy"
  exit 0
fi

# Checkpoints: 2-D full on 6x5 (weight [heads, 2*6-1]), 1-D full N=40, 1-D symmetric N=30, and
# one with no positional weight. Two layers each, so the first layer's weight must be picked.
"$python" - "$tmp" <<'PY' || fail "could not write the synthetic checkpoints"
import sys, h5py, numpy as np
tmp = sys.argv[1]
def write(name, config, weights):
    with h5py.File(f"{tmp}/{name}.h5", "w") as f:
        p = f.create_group("params")
        p["encoder.layers.0.attn.q_proj.weight"] = np.eye(4, dtype=np.float32)
        for key, w in weights.items():
            p[key] = w.astype(np.float32)
        f.attrs["step"] = np.int64(10)
        f.attrs["config"] = config
def ramp(heads, width, n):
    d = np.arange(width) - (n - 1)
    return np.stack([0.01 * np.exp(-np.abs(d) / 4.0) + 1e-3 * h * d / n for h in range(heads)])
write("mnist2d", "model:\n  positional: {type: fastrpb2d, grid: [6, 5], parameterization: full}\n",
      {"encoder.layers.0.attn.positional.weight": ramp(4, 11, 6),
       "encoder.layers.1.attn.positional.weight": np.zeros((4, 11))})
write("text1d", "model:\n  positional:\n    type: fastrpb\n    parameterization: full\n",
      {"encoder.layers.1.attn.positional.weight": np.zeros((3, 79)),
       "encoder.layers.0.attn.positional.weight": ramp(3, 79, 40)})
write("listops1d", "model:\n  positional: {type: fastrpb, parameterization: symmetric}\n",
      {"encoder.layers.0.attn.positional.weight": ramp(2, 30, 1)})
write("nopos", "model:\n  positional: none\n", {})
PY

# What `relpos bench attention --json` prints; softmax runs out of memory at 4096.
"$python" - "$tmp/bench.json" <<'PY' || fail "could not write the bench JSON"
import json, sys
rows = [("softmax", 1024, 2.0, 6.0, 40e6), ("softmax", 2048, 8.0, 25.0, 160e6),
        ("softmax", 4096, None, None, None), ("linear_sikf_fastrpb", 1024, 1.2, 3.4, 4e6),
        ("linear_sikf_fastrpb", 2048, 2.5, 7.0, 8e6),
        ("linear_sikf_fastrpb", 4096, 5.1, 14.5, 16e6)]
results = [{"variant": v, "length": n, "forward_ms": f, "forward_backward_ms": fb,
            "peak_bytes": None if b is None else int(b), "oom": f is None}
           for v, n, f, fb, b in rows]
with open(sys.argv[1], "w") as out:
    json.dump({"device": "cpu", "batch": 1, "heads": 8, "dim": 32, "threads": 2,
               "results": results}, out)
PY

# Run directories as the trainer writes them: train, eval (val) and test events, summary.json.
for run in a b; do
  mkdir -p "$tmp/run_$run"
  "$python" - "$tmp/run_$run" <<'PY' || fail "could not write the run directory"
import json, math, sys
with open(f"{sys.argv[1]}/metrics.jsonl", "w") as f:
    def event(**e):
        f.write(json.dumps(e) + "\n")
    for step in range(10, 210, 10):
        event(event="train", step=step, epoch=0, loss=2.3 * math.exp(-step / 80), lr=1e-3,
              grad_norm=1.0, examples_per_s=100.0, elapsed_s=step / 10)
        if step % 50 == 0:
            event(loss=1.0, accuracy=0.5 + step / 1000, macro_f1=0.4 + step / 1000, examples=100,
                  event="eval", split="val", step=step, best=True)
    event(loss=None, accuracy=0.7, macro_f1=0.6, examples=100, event="test", weights="last",
          step=200)
with open(f"{sys.argv[1]}/summary.json", "w") as f:
    json.dump({"metric": "macro_f1", "steps": 200}, f)
PY
done

# expect_png DESCRIPTION OUT.png -- COMMAND...: exit 0 and a PNG file.
expect_png() {
  local what=$1 png=$2; shift 3
  if ! "$@" >"$tmp/out" 2>"$tmp/err"; then
    fail "$what: exit $?"; sed 's/^/  | /' "$tmp/err" >&2; return
  fi
  [[ -s $png ]] || { fail "$what: $png not written"; return; }
  local sig
  sig=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
  [[ $sig == 89504e470d0a1a0a ]] || fail "$what: $png does not start with the PNG signature ($sig)"
}
# expect_error DESCRIPTION CODE PATTERN -- COMMAND...: that exit status and one stderr line.
expect_error() {
  local what=$1 want=$2 pattern=$3; shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [[ $got -eq $want ]] || fail "$what: exit $got, expected $want: $(cat "$tmp/err")"
  [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "$what: expected one line on stderr: $(cat "$tmp/err")"
  grep -q -- "$pattern" "$tmp/err" || fail "$what: stderr '$(cat "$tmp/err")' lacks '$pattern'"
}

p=("$python" "$plots")
expect_png "figure3" "$tmp/f3.png" -- "${p[@]}" figure3 "$tmp/f3.png" "$tmp/bench.json"
expect_png "figure3 --time forward" "$tmp/f3f.png" -- \
  "${p[@]}" figure3 "$tmp/f3f.png" "$tmp/bench.json" --time forward
expect_png "figure1" "$tmp/f1.png" -- "${p[@]}" figure1 "$tmp/f1.png" \
  "$tmp/text1d.h5:TC" "$tmp/listops1d.h5:ListOps"
grep -q "encoder.layers.0.attn.positional.weight \[3, 79\]" "$tmp/out" ||
  fail "figure1 did not pick the first layer's weight: $(cat "$tmp/out")"
expect_png "figure1 --separate" "$tmp/f1s.png" -- "${p[@]}" figure1 "$tmp/f1s.png" \
  "$tmp/text1d.h5" "$tmp/mnist2d.h5:MNIST" --separate --no-heads --convention relpos
expect_png "figure2" "$tmp/f2.png" -- "${p[@]}" figure2 "$tmp/f2.png" "$tmp/mnist2d.h5" --pixel 3,2
grep -q "grid 6x5" "$tmp/out" ||
  fail "figure2 did not read the grid from the config: $(cat "$tmp/out")"
expect_png "figure2 --grid --head" "$tmp/f2h.png" -- \
  "${p[@]}" figure2 "$tmp/f2h.png" "$tmp/mnist2d.h5" --pixel 0,0 --grid 6,6 --head 1
expect_png "curves" "$tmp/cu.png" -- "${p[@]}" curves "$tmp/cu.png" "$tmp/run_a:A" "$tmp/run_b"
grep -q "20 train and 4 eval events, metric macro_f1" "$tmp/out" ||
  fail "curves read the wrong events: $(cat "$tmp/out")"

# The language-model table of `relpos reproduce lm`: two models with a memory, one without.
cat >"$tmp/lm.csv" <<'CSV'
model,pe,seeds_done,mem_len,bpc_best_mean,bpc_best_std,bpc_last_mean,bpc_last_std,train_s_mean,train_s_std,peak_mb_mean,peak_mb_std,bpc_1x_mean,bpc_1x_std,bpc_2x_mean,bpc_2x_std,bpc_4x_mean,bpc_4x_std,problem
transformer_xl,rel_xl,3,64,2.3,0.01,2.31,0.01,100,1,40,0,2.3,0.01,2.28,0.01,2.27,0.02,
transformer_lm,absolute,3,0,2.6,0.02,2.61,0.02,90,1,35,0,2.6,0.02,,,,,
linear_sikf,none,2,64,2.5,0.03,2.52,0.03,80,1,30,0,2.5,0.03,2.55,0.02,,,4x memory: failed
CSV
expect_png "lm-memory" "$tmp/lm.png" -- "${p[@]}" lm-memory "$tmp/lm.png" "$tmp/lm.csv"
echo "model,score" >"$tmp/other.csv"
expect_error "not an lm table" 2 "is not a table.csv of" -- \
  "${p[@]}" lm-memory "$tmp/x.png" "$tmp/other.csv"
expect_error "no positional weight" 2 "no FastRPB weight" -- \
  "${p[@]}" figure1 "$tmp/x.png" "$tmp/nopos.h5"
expect_error "figure2 on a 1-D checkpoint" 2 "not fastrpb2d" -- \
  "${p[@]}" figure2 "$tmp/x.png" "$tmp/text1d.h5"
expect_error "pixel outside the grid" 2 "outside the 6x5 grid" -- \
  "${p[@]}" figure2 "$tmp/x.png" "$tmp/mnist2d.h5" --pixel 12,10
expect_error "missing checkpoint" 2 "no such checkpoint" -- \
  "${p[@]}" figure1 "$tmp/x.png" "$tmp/absent.h5"
expect_error "not a run directory" 2 "no metrics.jsonl" -- "${p[@]}" curves "$tmp/x.png" "$tmp"
mkdir -p "$tmp/nompl/matplotlib"
echo 'raise ImportError("hidden for the test")' >"$tmp/nompl/matplotlib/__init__.py"
expect_error "missing matplotlib" 3 "apt-get install python3-matplotlib" -- \
  env PYTHONPATH="$tmp/nompl" "${p[@]}" figure3 "$tmp/x.png" "$tmp/bench.json"
[[ ! -e $tmp/x.png ]] || fail "a failed command wrote x.png"

if ((failures > 0)); then
  echo "test_plots: $failures failure(s)"
  exit 1
fi
echo "test_plots: all checks passed"
