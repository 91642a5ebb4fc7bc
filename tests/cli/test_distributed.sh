#!/usr/bin/env bash
# Data-parallel training through the real CLI (README "Training on several processes"):
# `mpirun -np 2 relpos train` against one process with the same global batch, for a classifier
# and a Transformer-XL with memory: parameters and logged losses agree to 1e-6 relative (not
# bitwise: the sum over ranks adds the two halves of each gradient in another order than one
# process's GEMMs do, a difference of a few f32 ulps per step; the bound is on each tensor's
# largest difference over its largest magnitude). Eval under mpirun counts every
# example once (odd split sizes, batches not divisible by 2); checkpoints resume across world sizes
# (2 -> 1 and 1 -> 2 ranks, LM memory included); a rank that fails ends the whole job at once,
# named. Skips (exit 77) when relpos was built without MPI or mpirun is missing.
# Usage: test_distributed.sh RELPOS_BINARY
# RELPOS_TEST_DEVICE=cuda runs every job on the GPU (the ranks share it: NCCL; tools/gpu-check.sh).
set -uo pipefail
relpos=$1
device=${RELPOS_TEST_DEVICE:-cpu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python=/usr/bin/python3
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

if "$relpos" --version | grep -q "built without MPI"; then
  echo "SKIPPED (relpos built without MPI: install libopenmpi-dev and rebuild)"; exit 77
fi
if ! command -v mpirun >/dev/null; then
  echo "SKIPPED (no mpirun: install openmpi-bin)"; exit 77
fi
if ! "$python" -c "import h5py" 2>/dev/null; then
  echo "SKIPPED (no h5py for $python: install python3-h5py)"; exit 77
fi
mpi=(mpirun --oversubscribe -np 2)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
# Shared memory between ranks on one host without ptrace rights (containers).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# run WHAT LOG -- COMMAND...: runs it (at most 300 s), its stderr kept in LOG; fails WHAT when it
# does not exit 0.
run() {
  local what=$1 log=$2; shift 3
  timeout 300 "$@" >"$log.out" 2>"$log"
  local status=$?
  [[ $status -eq 0 ]] || { fail "$what: exit $status"; sed 's/^/  | /' "$log" >&2; }
}

# close A.h5 B.h5 BOUND WHAT: every parameter (and LM memory) of two checkpoints within BOUND:
# max |a - b| over max(|a|, |b|), tensor by tensor.
close() {
  "$python" - "$1" "$2" "$3" <<'PY' || fail "$4"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
assert a.attrs["step"] == b.attrs["step"], (a.attrs["step"], b.attrs["step"])
names = [f"params/{n}" for n in a["params"]] + [f"state/{n}" for n in a["state"] if "memory" in n]
assert names and sorted(names) == sorted(
    [f"params/{n}" for n in b["params"]] + [f"state/{n}" for n in b["state"] if "memory" in n])
worst = 0.0
for n in names:
    x, y = a[n][()].astype(np.float64), b[n][()].astype(np.float64)
    assert x.shape == y.shape, (n, x.shape, y.shape)
    scale = max(np.abs(x).max(), np.abs(y).max(), 1e-30)
    worst = max(worst, np.abs(x - y).max() / scale)
print(f"  largest relative difference over {len(names)} tensors: {worst:.2e}")
assert worst <= float(sys.argv[3]), worst
PY
}

# same_losses A/metrics.jsonl B/metrics.jsonl WHAT: the training losses logged, step by step.
same_losses() {
  "$python" - "$1" "$2" <<'PY' || fail "$3"
import sys, json
def losses(path):
    return [(r["step"], r["loss"]) for r in map(json.loads, open(path)) if r.get("event") == "train"]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert a and [s for s, _ in a] == [s for s, _ in b], (a, b)
worst = max(abs(x - y) / abs(x) for (_, x), (_, y) in zip(a, b))
assert worst <= 1e-6, (worst, a, b)
PY
}

# --- A classifier: tiny ListOps with odd split sizes, global batch 7 (4 + 3 rows). ---
"$relpos" data prepare listops --out "$tmp/listops" --train 61 --val 17 --test 19 \
  --min_length 10 --max_length 40 --seed 3 >/dev/null || fail "data prepare listops"
cat >"$tmp/cls.yaml" <<YAML
model: {num_layers: 2, num_heads: 2, model_dim: 16, mlp_dim: 32, dropout: 0.0,
        attention: {type: linear, feature_map: sikf}, positional: {type: fastrpb}}
data: {dataset: listops, dir: $tmp/listops, max_len: 48, batch_size: 7}
optimizer: {type: sgd, lr: 0.1, momentum: 0.9}
train: {steps: 12, eval_every: 5, log_every: 1, clip_grad_norm: 1.0}
device: $device
YAML
run "classifier, 1 process" "$tmp/c1.err" -- "$relpos" train "$tmp/cls.yaml" --out "$tmp/c1" --quiet
run "classifier, 2 ranks" "$tmp/c2.err" -- "${mpi[@]}" "$relpos" train "$tmp/cls.yaml" \
  --out "$tmp/c2" --quiet
close "$tmp/c1/checkpoints/last.h5" "$tmp/c2/checkpoints/last.h5" 1e-6 \
  "classifier: 2 ranks end with other parameters than 1 process"
same_losses "$tmp/c1/metrics.jsonl" "$tmp/c2/metrics.jsonl" \
  "classifier: 2 ranks log other losses than 1 process"
# Adam's step lr·m/√v has the same size whatever the gradient's scale: FastRPB's weights start
# near 1e-6 and move by lr each update, so their gradients' ~6e-7 relative rounding differences
# become ~1.5e-7 in weights whose largest value is ~0.026 after 12 updates: ~6e-6 relative
# (every other tensor < 1e-6).
run "classifier with adam, 1 process" "$tmp/a1.err" -- "$relpos" train "$tmp/cls.yaml" \
  --out "$tmp/a1" --set "optimizer={type: adam, lr: 0.003}" --quiet
run "classifier with adam, 2 ranks" "$tmp/a2.err" -- "${mpi[@]}" "$relpos" train "$tmp/cls.yaml" \
  --out "$tmp/a2" --set "optimizer={type: adam, lr: 0.003}" --quiet
close "$tmp/a1/checkpoints/last.h5" "$tmp/a2/checkpoints/last.h5" 2e-5 \
  "classifier with adam: 2 ranks end with other parameters than 1 process"
same_losses "$tmp/a1/metrics.jsonl" "$tmp/a2/metrics.jsonl" \
  "classifier with adam: 2 ranks log other losses than 1 process"
[[ $(grep -c "test accuracy" "$tmp/c2.err.out") -eq 1 ]] ||
  fail "2 ranks: not exactly one final line (rank 0's): $(cat "$tmp/c2.err.out")"

# Eval under mpirun: each of the 19 test examples once, the metrics of one process.
run "eval, 1 process" "$tmp/e1.err" -- "$relpos" eval "$tmp/c1/checkpoints/last.h5" --json \
  --set data.eval_batch_size=5
run "eval, 2 ranks" "$tmp/e2.err" -- "${mpi[@]}" "$relpos" eval "$tmp/c1/checkpoints/last.h5" \
  --json --set data.eval_batch_size=5
"$python" - "$tmp/e1.err.out" "$tmp/e2.err.out" <<'PY' || fail "eval under mpirun differs"
import sys, json
one, two = (open(p).read().splitlines() for p in sys.argv[1:3])
assert len(two) == 1, two  # rank 0 alone prints
a, b = json.loads(one[0]), json.loads(two[0])
assert a["examples"] == b["examples"] == 19, (a, b)
assert a["accuracy"] == b["accuracy"] and abs(a["loss"] - b["loss"]) <= 1e-6 * abs(a["loss"]), (a, b)
PY

# A diverging job: the loss is read from the device every 4 updates only, and the ranks gather
# their windows, so 2 ranks stop together, exit 2, naming the first non-finite step of the
# single process.
diverge=(train "$tmp/cls.yaml" --set "optimizer={type: sgd, lr: 1.0e30}" --set train.log_every=4
         --quiet)
timeout 120 "$relpos" "${diverge[@]}" --out "$tmp/nan1" >/dev/null 2>"$tmp/nan1.err"
[[ $? -eq 2 ]] || fail "diverging, 1 process: expected exit 2: $(cat "$tmp/nan1.err")"
timeout 120 "${mpi[@]}" "$relpos" "${diverge[@]}" --out "$tmp/nan2" >/dev/null 2>"$tmp/nan2.err"
[[ $? -eq 2 ]] || fail "diverging, 2 ranks: expected exit 2: $(cat "$tmp/nan2.err")"
step_named() { grep -oE "\[train\] the (loss|gradient norm) is [^ ]+ at step [0-9]+" "$1" | grep -oE "step [0-9]+$" | head -1; }
[[ -n $(step_named "$tmp/nan1.err") && $(step_named "$tmp/nan2.err") == $(step_named "$tmp/nan1.err") ]] ||
  fail "diverging: 2 ranks name another step than 1 process: $(cat "$tmp/nan1.err" "$tmp/nan2.err")"

# Predictions are one process's: refused under mpirun, at once, naming the rank.
timeout 60 "${mpi[@]}" "$relpos" eval "$tmp/c1/checkpoints/last.h5" --predictions "$tmp/p.h5" \
  >"$tmp/pred.out" 2>"$tmp/pred.err"
[[ $? -eq 2 ]] || fail "eval --predictions under mpirun: expected exit 2: $(cat "$tmp/pred.err")"
grep -q "relpos: rank [01] of 2: \[predictions\] predictions are written by one process" \
  "$tmp/pred.err" || fail "eval --predictions under mpirun: $(cat "$tmp/pred.err")"
[[ ! -e $tmp/p.h5 ]] || fail "eval --predictions under mpirun wrote a file"

# Ranks that disagree stop at once, rank 0 naming them and what differs: the same config (a
# relative data.dir) run in two folders whose data differ, and a rank with another model_dim.
mpmd=(mpirun --oversubscribe)
[[ $(id -u) -eq 0 ]] && mpmd+=(--allow-run-as-root)
mkdir -p "$tmp/wd0" "$tmp/wd1"
cp -r "$tmp/listops" "$tmp/wd0/data"
"$relpos" data prepare listops --out "$tmp/wd1/data" --train 61 --val 17 --test 19 \
  --min_length 10 --max_length 40 --seed 4 >/dev/null || fail "data prepare listops (seed 4)"
sed "s|dir: $tmp/listops|dir: data|" "$tmp/cls.yaml" >"$tmp/relative.yaml"
# disagree WHAT PATTERN -- RANK0 ARGS... : RANK1 ARGS...: exit 2, one relpos line matching PATTERN.
disagree() {
  local what=$1 pattern=$2
  shift 3
  timeout 120 "${mpmd[@]}" "$@" >"$tmp/disagree.out" 2>"$tmp/disagree.err"
  local status=$?
  [[ $status -eq 2 ]] || fail "$what: exit $status, expected 2: $(cat "$tmp/disagree.err")"
  [[ $(grep -c "^relpos: " "$tmp/disagree.err") -eq 1 ]] ||
    fail "$what: not one relpos line: $(cat "$tmp/disagree.err")"
  grep -qE "$pattern" "$tmp/disagree.err" || fail "$what: $(cat "$tmp/disagree.err")"
}
disagree "ranks reading other data" \
  "^relpos: rank 0 of 2: \[train\] rank 1 of 2 differs from rank 0 in the train split \(61 examples on rank 0\)" \
  -- -np 1 -wdir "$tmp/wd0" "$relpos" train "$tmp/relative.yaml" --out run --quiet \
  : -np 1 -wdir "$tmp/wd1" "$relpos" train "$tmp/relative.yaml" --out run --quiet
disagree "ranks with another model_dim" \
  "^relpos: rank 0 of 2: \[train\] rank 1 of 2 differs from rank 0 in the configuration" \
  -- -np 1 "$relpos" train "$tmp/cls.yaml" --out "$tmp/dis" --quiet \
  : -np 1 "$relpos" train "$tmp/cls.yaml" --out "$tmp/dis" --set model.model_dim=32 --quiet

# launch N: the launcher words for a job of N (none for one process).
launch() { if [[ $1 -eq 2 ]]; then echo "${mpi[@]}"; fi; }

# resume_across NAME CONFIG REFERENCE.h5: 5 updates on 2 ranks then the rest on 1, and 5 on 1
# then the rest on 2; both must end where REFERENCE (one uninterrupted process) ends.
resume_across() {
  local name=$1 config=$2 reference=$3 pair first second dir
  for pair in "2 1" "1 2"; do
    read -r first second <<<"$pair"
    dir=$tmp/$name.$first$second
    run "$name $first ranks, first half" "$dir.a.err" -- $(launch "$first") "$relpos" train \
      "$config" --out "$dir" --set train.steps=5 --quiet
    run "$name resumed on $second ranks" "$dir.b.err" -- $(launch "$second") "$relpos" train \
      "$config" --out "$dir" --resume "$dir/checkpoints/last.h5" --allow-config-change --quiet
    close "$reference" "$dir/checkpoints/last.h5" 1e-6 \
      "$name: $first ranks resumed on $second does not end as 1 process does"
  done
}

# A global batch of 1: rank 1's shard of every batch is empty, and it still steps with rank 0.
run "classifier batch 1, 1 process" "$tmp/b1.err" -- "$relpos" train "$tmp/cls.yaml" \
  --out "$tmp/b1" --set train.steps=6 --set data.batch_size=1 --set data.eval_batch_size=3 --quiet
run "classifier batch 1, 2 ranks" "$tmp/b2.err" -- "${mpi[@]}" "$relpos" train "$tmp/cls.yaml" \
  --out "$tmp/b2" --set train.steps=6 --set data.batch_size=1 --set data.eval_batch_size=3 --quiet
close "$tmp/b1/checkpoints/last.h5" "$tmp/b2/checkpoints/last.h5" 1e-6 \
  "classifier batch 1: 2 ranks (one of them idle each step) end elsewhere than 1 process"

resume_across classifier "$tmp/cls.yaml" "$tmp/c1/checkpoints/last.h5"

# --- A Transformer-XL with segment memory: 4 rows of the stream (2 per rank), memory 8. ---
corpus=$tmp/corpus
mkdir -p "$corpus"
english=/usr/share/common-licenses/GPL-3
cp "$english" "$corpus/train.txt"  # every byte of valid and test occurs in training
tail -c +20001 "$english" | head -c 1501 >"$corpus/valid.txt"
tail -c +23001 "$english" | head -c 1499 >"$corpus/test.txt"
cat >"$tmp/lm.yaml" <<YAML
model: {type: transformer_xl, num_layers: 2, num_heads: 2, model_dim: 16, mlp_dim: 32,
        dropout: 0.0, attention_dropout: 0.0, mem_len: 8}
data: {dataset: chars, dir: $corpus, batch_size: 4, tgt_len: 8}
optimizer: {type: sgd, lr: 0.1, momentum: 0.9}
train: {steps: 10, eval_every: 5, log_every: 1, clip_grad_norm: 0.25}
eval: {max_batches: 0}
device: $device
YAML
run "lm, 1 process" "$tmp/l1.err" -- "$relpos" train "$tmp/lm.yaml" --out "$tmp/l1" --quiet
run "lm, 2 ranks" "$tmp/l2.err" -- "${mpi[@]}" "$relpos" train "$tmp/lm.yaml" --out "$tmp/l2" --quiet
close "$tmp/l1/checkpoints/last.h5" "$tmp/l2/checkpoints/last.h5" 1e-6 \
  "lm: 2 ranks end with other parameters or memory than 1 process"
same_losses "$tmp/l1/metrics.jsonl" "$tmp/l2/metrics.jsonl" "lm: 2 ranks log other losses"
"$python" - "$tmp/l1/summary.json" "$tmp/l2/summary.json" <<'PY' || fail "lm: test bpc differs"
import sys, json
a, b = (json.load(open(p)) for p in sys.argv[1:3])
x, y = a["test_last"]["bpc"], b["test_last"]["bpc"]
assert abs(x - y) <= 1e-6 * x, (x, y)
PY
resume_across lm "$tmp/lm.yaml" "$tmp/l1/checkpoints/last.h5"  # memory rows cut anew

# A global batch smaller than the job: the LM's stream rows cannot be shared out.
timeout 120 "${mpi[@]}" "$relpos" train "$tmp/lm.yaml" --out "$tmp/l3" --set data.batch_size=1 \
  >"$tmp/small.out" 2>"$tmp/small.err"
[[ $? -eq 2 ]] || fail "lm batch 1 on 2 ranks: expected exit 2: $(cat "$tmp/small.err")"
grep -q "rank [01] of 2: \[lm\]" "$tmp/small.err" ||
  fail "lm batch 1 on 2 ranks: the error names no rank: $(cat "$tmp/small.err")"

# --- A failing rank: rank 1 reads a damaged copy of the data; the job ends at once, rank named. ---
cp -r "$tmp/listops" "$tmp/damaged"
for f in "$tmp/damaged"/*; do [[ -f $f ]] && head -c 100 "$f" >"$f.cut" && mv "$f.cut" "$f"; done
start=$SECONDS
failing=(mpirun --oversubscribe)
[[ $(id -u) -eq 0 ]] && failing+=(--allow-run-as-root)
timeout 120 "${failing[@]}" -np 1 "$relpos" train "$tmp/cls.yaml" --out "$tmp/f" --quiet : \
  -np 1 "$relpos" train "$tmp/cls.yaml" --out "$tmp/f" --set data.dir="$tmp/damaged" --quiet \
  >"$tmp/fail.out" 2>"$tmp/fail.err"
status=$?
elapsed=$((SECONDS - start))
[[ $status -ne 0 && $status -ne 124 ]] || fail "a failing rank: exit $status (124: the job hung)"
grep -q "relpos: rank 1 of 2: \[" "$tmp/fail.err" ||
  fail "a failing rank is not named: $(head -c 2000 "$tmp/fail.err")"
[[ $elapsed -le 30 ]] || fail "a failing rank took $elapsed s to end the job"

if [[ $failures -gt 0 ]]; then
  echo "$failures distributed check(s) failed"
  exit 1
fi
echo "distributed: all checks passed"
