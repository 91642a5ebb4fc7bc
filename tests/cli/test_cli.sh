#!/usr/bin/env bash
# The relpos command line end to end (DESIGN §7): help texts, `data prepare`, `train` on a tiny
# generated ListOps, `eval --json` (one JSON object on stdout), `eval --predictions` (read back
# with h5py when the system Python has it), and user errors: exit status 2 with one line on
# stderr, never a stack dump. Usage: test_cli.sh RELPOS_BINARY
set -uo pipefail
relpos=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python=/usr/bin/python3
source "$(dirname "$0")/checks.sh"
# One line on stderr starting with the expected prefix.
expect_error_line() {
  local what=$1 prefix=$2
  local lines
  lines=$(wc -l <"$tmp/err")
  [[ $lines -eq 1 ]] || fail "$what: $lines lines on stderr, expected 1: $(cat "$tmp/err")"
  grep -q -- "^$prefix" "$tmp/err" || fail "$what: stderr '$(cat "$tmp/err")' lacks '$prefix'"
}

# Every subcommand's help comes from its option definitions; an unknown option is one line.
for sub in "" train eval generate reproduce "data" "data prepare" list bench "bench attention" import "import reference" export "export reference" \
  "bench index-first"; do
  expect_status 0 "relpos $sub --help" -- "$relpos" $sub --help
  grep -q "^usage: relpos $sub" "$tmp/out" || fail "relpos $sub --help prints no usage"
  [[ -z $sub ]] && continue
  expect_status 2 "relpos $sub --nope" -- "$relpos" $sub --nope
  expect_error_line "relpos $sub --nope" "relpos: \[${sub%% *}"
done
expect_status 2 "no command" -- "$relpos"
grep -q "^usage: relpos" "$tmp/err" || fail "relpos without a command prints no usage on stderr"
expect_status 0 "--version" -- "$relpos" --version
# cuBLAS is opened when a CUDA device is used, not at every start (it took 0.6 s and 217 MB).
LD_DEBUG=files "$relpos" --version >/dev/null 2>"$tmp/loaded"
grep -q "file=libcublas" "$tmp/loaded" && fail "relpos --version loads cuBLAS"

mkdir -p "$tmp/listops"
echo "half a split" >"$tmp/listops/basic_train.tsv.tmp.999999999"  # of a killed prepare
expect_status 0 "data prepare listops" -- "$relpos" data prepare listops --out "$tmp/listops" \
  --train 64 --val 16 --test 16 --min_length 10 --max_length 60 --seed 1
[[ ! -e $tmp/listops/basic_train.tsv.tmp.999999999 ]] ||
  fail "data prepare left the temporary file of a killed one"
# A misspelt option is refused before anything is written (no subset where the full set was meant).
for name in mnist fashion-mnist moby-dick listops enwik8; do
  expect_status 2 "data prepare $name --fulll" -- "$relpos" data prepare $name --out "$tmp/typo" \
    --fulll true
  expect_error_line "data prepare $name --fulll" "relpos: \[data prepare\] unknown option 'fulll'"
  [[ ! -e $tmp/typo ]] || fail "data prepare $name --fulll wrote $tmp/typo"
done

cat >"$tmp/tiny.yaml" <<YAML
model:
  num_layers: 1
  num_heads: 2
  model_dim: 16
  mlp_dim: 32
  positions: sinusoidal
  attention: {type: linear, feature_map: elu1}
  positional: {type: fastrpb}
data: {dataset: listops, dir: $tmp/listops, max_len: 64, batch_size: 8}
optimizer: {type: lra_adam, lr: 0.01}
schedule: {type: lra, warmup_steps: 2}
train: {steps: 4, eval_every: 2, log_every: 2, out: $tmp/run}
YAML
expect_status 0 "train" -- "$relpos" train "$tmp/tiny.yaml" --quiet
grep -q "test accuracy" "$tmp/out" || fail "train prints no final metrics line: $(cat "$tmp/out")"
# Linear attention's chunk orders causal sums only: a classifier refuses any value but the
# default, which its config.yaml lists (so its checkpoints stay readable).
grep -q "chunk: 64" "$tmp/run/config.yaml" || fail "config.yaml lacks the linear chunk default"
expect_status 2 "train a classifier with chunk" -- "$relpos" train "$tmp/tiny.yaml" --quiet \
  --set model.attention.chunk=16 --out "$tmp/chunk16"
expect_error_line "train a classifier with chunk" \
  "relpos: \[attention linear\] chunk (16) only applies to causal attention"
[[ ! -e $tmp/chunk16 ]] || fail "a refused chunk left $tmp/chunk16"
# config.yaml is the whole configuration: the defaults the file leaves out (the trunk's, the
# attention variant's, the trainer's) are written in, and training from it computes the same run.
for line in "attention_dropout: 0.1" "eps: 1e-06" "chunk: 64" "log_every: 2" "patience: 0"; do
  grep -q "$line" "$tmp/run/config.yaml" || fail "config.yaml lacks '$line': $(cat "$tmp/run/config.yaml")"
done
expect_status 0 "train from a run's config.yaml" -- "$relpos" train "$tmp/run/config.yaml" \
  --out "$tmp/again" --quiet
cmp -s "$tmp/run/config.yaml" <(sed "s|$tmp/again|$tmp/run|" "$tmp/again/config.yaml") ||
  fail "a run of config.yaml writes another config.yaml: $(diff "$tmp/run/config.yaml" "$tmp/again/config.yaml")"
"$relpos" eval "$tmp/run/checkpoints/last.h5" --json >"$tmp/eval_run.json" &&
  "$relpos" eval "$tmp/again/checkpoints/last.h5" --json >"$tmp/eval_again.json" &&
  cmp -s <(sed 's/"checkpoint": [^,]*,//' "$tmp/eval_run.json") \
    <(sed 's/"checkpoint": [^,]*,//' "$tmp/eval_again.json") ||
  fail "training from config.yaml ends elsewhere: $(cat "$tmp/eval_run.json" "$tmp/eval_again.json")"
# One block + CLS pooling: FastRPB's term (zero on the CLS row) cannot reach the logits. Said
# even with --quiet, and kept in log.txt.
warning="encoder.layers.0.attn.positional (fastrpb) cannot reach the output"
grep -qF "$warning" "$tmp/err" || fail "train does not warn that FastRPB is unreachable"
grep -qF "$warning" "$tmp/run/log.txt" || fail "log.txt lacks the unreachable-FastRPB warning"
for f in config.yaml metrics.jsonl log.txt summary.json checkpoints/last.h5 checkpoints/best.h5; do
  [[ -f $tmp/run/$f ]] || fail "train did not write $f"
done

expect_status 0 "eval --json" -- "$relpos" eval "$tmp/run/checkpoints/last.h5" --json
[[ $(wc -l <"$tmp/out") -eq 1 ]] || fail "eval --json printed $(wc -l <"$tmp/out") lines"
"$python" -c '
import json, sys
m = json.load(open(sys.argv[1]))
assert m["split"] == "test" and m["examples"] == 16, m
assert 0 <= m["accuracy"] <= 1 and m["loss"] > 0, m
' "$tmp/out" || fail "eval --json output is not the expected JSON: $(cat "$tmp/out")"

expect_status 0 "eval --predictions" -- "$relpos" eval "$tmp/run/checkpoints/best.h5" --split val \
  --predictions "$tmp/pred.h5"
[[ -f $tmp/pred.h5 ]] || fail "eval --predictions wrote nothing"
if "$python" -c "import h5py" 2>/dev/null; then
  "$python" -c '
import h5py, sys
f = h5py.File(sys.argv[1], "r")
assert f["logits"].shape == (16, 10), f["logits"].shape
assert f["labels"].shape == (16,), f["labels"].shape
ck = h5py.File(sys.argv[2], "r")
assert "params" in ck and ck.attrs["step"] == 4, dict(ck.attrs)
' "$tmp/pred.h5" "$tmp/run/checkpoints/last.h5" || fail "h5py cannot read the predictions"
  # Finite weights whose products overflow: eval prints the non-finite loss with a warning, and
  # debug.detect_anomaly (ignored by eval before) names the op.
  cp "$tmp/run/checkpoints/last.h5" "$tmp/overflow.h5"
  "$python" -c '
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    for name in ("encoder.layers.0.mlp.fc1.weight", "encoder.layers.0.mlp.fc2.weight"):
        f["params/" + name][...] = f["params/" + name][()] * 1e30
' "$tmp/overflow.h5" || fail "h5py cannot scale the checkpoint's weights"
  expect_status 0 "eval of overflowing weights" -- "$relpos" eval "$tmp/overflow.h5"
  grep -q "^relpos: \[eval\] warning: the loss is .*nan: the model gives non-finite values" \
    "$tmp/err" || fail "eval of overflowing weights does not warn: $(cat "$tmp/err")"
  expect_status 2 "eval with debug.detect_anomaly" -- "$relpos" eval "$tmp/overflow.h5" \
    --set debug.detect_anomaly=true
  expect_error_line "eval with debug.detect_anomaly" "relpos: \[anomaly\] .* produced NaN/Inf"
else
  echo "SKIPPED: h5py checks (no h5py in $python)"
fi

# Seed 001's layers from YAML: index-first attention in the first block (post-LN, no embedding
# LayerNorm, softmax without attention dropout) and stacked heads, trained and evaluated.
cat >"$tmp/isdpa.yaml" <<YAML
model: {num_layers: 2, num_heads: 2, model_dim: 16, mlp_dim: 32, positions: sinusoidal,
        norm: post, embedding_norm: false, index_first: true, head_combiner: stacked,
        attention_dropout: 0, attention: {type: softmax}}
data: {dataset: listops, dir: $tmp/listops, max_len: 64, batch_size: 8}
optimizer: {type: adam, lr: 0.003}
train: {steps: 4, eval_every: 2, log_every: 2, out: $tmp/isdpa}
YAML
expect_status 0 "train index_first + stacked heads" -- "$relpos" train "$tmp/isdpa.yaml" --quiet
grep -q "test accuracy" "$tmp/out" || fail "index_first run prints no final metrics: $(cat "$tmp/out")"
expect_status 0 "eval index_first" -- "$relpos" eval "$tmp/isdpa/checkpoints/last.h5" --json
expect_status 2 "index_first with pre-LN" -- "$relpos" train "$tmp/isdpa.yaml" \
  --set model.norm=pre --quiet
expect_error_line "index_first with pre-LN" "relpos: \[model\] index_first computes the first"
# bf16 products (train.precision): trains, writes the precision into config.yaml, evaluates;
# any other precision is refused by name.
expect_status 0 "train index_first in bf16" -- "$relpos" train "$tmp/isdpa.yaml" --quiet \
  --set train.precision=bf16 --out "$tmp/isdpa_bf16"
grep -q "precision: bf16" "$tmp/isdpa_bf16/config.yaml" || fail "config.yaml lacks precision: bf16"
expect_status 0 "eval a bf16 run" -- "$relpos" eval "$tmp/isdpa_bf16/checkpoints/last.h5" --json
expect_status 2 "train.precision=fp16" -- "$relpos" train "$tmp/isdpa.yaml" --quiet \
  --set train.precision=fp16 --out "$tmp/isdpa_fp16"
expect_error_line "train.precision=fp16" \
  "relpos: \[config\] train.precision must be f32 or bf16, got 'fp16'"
# A key set twice (by --set, or by --set and --out / --device / --data-dir) is refused: the last
# value was taken silently.
expect_status 2 "train --set a key twice" -- "$relpos" train "$tmp/isdpa.yaml" --quiet \
  --set train.steps=4 --set train.steps=6 --out "$tmp/twice"
expect_error_line "train --set a key twice" \
  "relpos: \[train\] the key 'train.steps' is set twice ('train.steps=4' and 'train.steps=6')"
expect_status 2 "train --set train.out and --out" -- "$relpos" train "$tmp/isdpa.yaml" --quiet \
  --set train.out="$tmp/a" --out "$tmp/b"
expect_error_line "train --set train.out and --out" "relpos: \[train\] the key 'train.out' is set twice"
[[ ! -e $tmp/twice && ! -e $tmp/a && ! -e $tmp/b ]] || fail "a key set twice made a run folder"
expect_status 2 "eval --set a key twice" -- "$relpos" eval "$tmp/isdpa_bf16/checkpoints/last.h5" \
  --set eval.max_batches=1 --set eval.max_batches=2
expect_error_line "eval --set a key twice" "relpos: \[eval\] the key 'eval.max_batches' is set twice"

# Resume a finished run's checkpoint into a longer run: refused without --allow-config-change
# (it changes the schedule), naming the key; then allowed, and the summary keeps the best
# validation of before the resume.
expect_status 2 "train --resume, more steps" -- "$relpos" train "$tmp/tiny.yaml" \
  --set train.steps=6 --resume "$tmp/run/checkpoints/last.h5" --quiet
grep -q "another configuration (train.steps: 4 -> 6)" "$tmp/err" ||
  fail "resume with changed steps does not name the key: $(cat "$tmp/err")"
expect_status 0 "train --resume" -- "$relpos" train "$tmp/tiny.yaml" --set train.steps=6 \
  --resume "$tmp/run/checkpoints/last.h5" --allow-config-change --quiet
grep -q '"steps": 6' "$tmp/run/summary.json" || fail "resumed run did not reach step 6"
"$python" -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["val_best"]["examples"] > 0, s["val_best"]
steps = [json.loads(l).get("step") for l in open(sys.argv[2])]
evals = [json.loads(l)["step"] for l in open(sys.argv[2]) if json.loads(l)["event"] == "eval"]
assert len(evals) == len(set(evals)), f"validation records repeated: {evals}"
' "$tmp/run/summary.json" "$tmp/run/metrics.jsonl" ||
  fail "after resume, summary.json or metrics.jsonl lost or repeated records"
# --profile N: the per-op and per-module tables of N updates on stdout, and no run directory.
sed "s/steps: 4,/steps: 12,/; s#out: $tmp/run#out: $tmp/profiled#" "$tmp/tiny.yaml" >"$tmp/tiny12.yaml"
expect_status 0 "train --profile" -- "$relpos" train "$tmp/tiny12.yaml" --profile 3 --quiet
for row in "^profile: 3 updates on cpu after 2 warm-up updates" "^matmul " "^(data) " \
  "^(optimizer) " "^all rows .* 100.0%" "^encoder.layers.0.attn " "^(model) "; do
  grep -q "$row" "$tmp/out" || fail "train --profile prints no line matching '$row': $(cat "$tmp/out")"
done
grep -q "out: $tmp/profiled" "$tmp/tiny12.yaml" || fail "the --profile test's config has no out"
[[ ! -e $tmp/profiled ]] || fail "train --profile wrote a run directory"
expect_status 2 "train --profile too long" -- "$relpos" train "$tmp/tiny12.yaml" --profile 6 --quiet
# (the tiny model's warning about its one FastRPB block comes first)
grep -q "^relpos: \[train\] --profile 6 needs 2 warm-up updates and twice 6 more" "$tmp/err" ||
  fail "train --profile too long: $(cat "$tmp/err")"
expect_status 2 "train --profile 0" -- "$relpos" train "$tmp/tiny12.yaml" --profile 0
expect_status 2 "train --profile huge" -- "$relpos" train "$tmp/tiny12.yaml" --profile 9223372036854775807
# A profile writes no run and counts its own updates: the run's options are refused, not ignored.
for option in "--out $tmp/profiled" --overwrite "--stop-at-step 1"; do
  # shellcheck disable=SC2086  # the option and its value are two words
  expect_status 2 "train --profile with $option" -- "$relpos" train "$tmp/tiny12.yaml" --profile 3 \
    $option --quiet
  expect_error_line "train --profile with $option" "relpos: \[train\] ${option%% *} excludes --profile"
done
[[ ! -e $tmp/profiled ]] || fail "train --profile --out wrote a run directory"
# --stop-at-step ends a session early (as a job time limit would); --resume finishes the same
# course, bit-exactly what one uninterrupted session computes.
expect_status 0 "train --stop-at-step" -- "$relpos" train "$tmp/tiny.yaml" --out "$tmp/stopped" \
  --stop-at-step 3 --quiet
grep -q "^stopped at step 3 as asked; continue with --resume $tmp/stopped/checkpoints/last.h5" \
  "$tmp/out" || fail "--stop-at-step says: $(cat "$tmp/out")"
[[ ! -f $tmp/stopped/summary.json ]] || fail "a stopped session wrote summary.json"
expect_status 0 "train --resume after --stop-at-step" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/stopped" --resume "$tmp/stopped/checkpoints/last.h5" --quiet
expect_status 0 "train uninterrupted" -- "$relpos" train "$tmp/tiny.yaml" --out "$tmp/whole" --quiet
if "$python" -c "import h5py" 2>/dev/null; then
  "$python" -c '
import h5py, sys
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
assert a.attrs["step"] == b.attrs["step"] == 4
for n in a["params"]:
    assert (a["params"][n][()] == b["params"][n][()]).all(), n
' "$tmp/stopped/checkpoints/last.h5" "$tmp/whole/checkpoints/last.h5" ||
    fail "a run stopped at step 3 and resumed differs from the uninterrupted one"
fi
# --stop-at-step at the last update stops before the test (the resume runs it alone); one the
# session does not reach is refused (they ran the session to its end, the stop ignored).
expect_status 0 "train --stop-at-step at the last update" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/stopped_last" --stop-at-step 4 --quiet
grep -q "^stopped at step 4 as asked" "$tmp/out" || fail "--stop-at-step 4 of 4 says: $(cat "$tmp/out")"
[[ ! -e $tmp/stopped_last/summary.json ]] || fail "--stop-at-step at the last update ran the test"
for stop in 3 5; do
  expect_status 2 "train --resume --stop-at-step $stop from step 4 of 4" -- "$relpos" train \
    "$tmp/tiny.yaml" --out "$tmp/stopped_last" --stop-at-step $stop --quiet \
    --resume "$tmp/stopped_last/checkpoints/last.h5"
  expect_error_line "--stop-at-step $stop from step 4" \
    "relpos: \[train\] --stop-at-step $stop is not an update of this session, which goes from step 4 to step 4"
done
expect_status 0 "train --resume of a run stopped at its last update" -- "$relpos" train \
  "$tmp/tiny.yaml" --out "$tmp/stopped_last" --quiet --resume "$tmp/stopped_last/checkpoints/last.h5"
grep -q '"steps": 4' "$tmp/stopped_last/summary.json" || fail "the resume did not test step 4"
# SIGTERM (a scheduler's time limit; Ctrl-C's SIGINT alike) ends a session after the update
# under way with checkpoints/last.h5 and exit status 143, and --resume continues the course of an
# uninterrupted run; it killed the run, losing every update since the last checkpoint. (The lra
# schedule does not depend on train.steps: the resumed and the uninterrupted run end 10 updates
# after the one the signal stopped, wherever that was.)
"$relpos" train "$tmp/tiny.yaml" --out "$tmp/signalled" --set train.steps=1000000 \
  --set train.eval_every=1000000 --quiet >"$tmp/signal_out" 2>"$tmp/signal_err" &
pid=$!
for _ in $(seq 600); do [[ -s $tmp/signalled/metrics.jsonl ]] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
status=$?
[[ $status -eq 143 ]] || fail "train after SIGTERM: exit $status: $(cat "$tmp/signal_err")"
grep -q "^stopped at step [0-9]* by SIGTERM; continue with --resume $tmp/signalled/checkpoints/last.h5" \
  "$tmp/signal_out" || fail "SIGTERM during training says: $(cat "$tmp/signal_out" "$tmp/signal_err")"
end=$(($(sed -n 's/^stopped at step \([0-9]*\) by SIGTERM.*/\1/p' "$tmp/signal_out") + 10))
short=(--set train.steps=$end --set train.eval_every=1000000 --quiet)
expect_status 0 "train --resume after SIGTERM" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/signalled" "${short[@]}" --resume "$tmp/signalled/checkpoints/last.h5" \
  --allow-config-change
expect_status 0 "train uninterrupted to the resumed run's end" -- "$relpos" train \
  "$tmp/tiny.yaml" --out "$tmp/whole_signalled" "${short[@]}"
if "$python" -c "import h5py" 2>/dev/null; then
  "$python" -c '
import h5py, sys
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
assert a.attrs["step"] == b.attrs["step"] == int(sys.argv[3])
for n in a["params"]:
    assert (a["params"][n][()] == b["params"][n][()]).all(), n
' "$tmp/signalled/checkpoints/last.h5" "$tmp/whole_signalled/checkpoints/last.h5" "$end" ||
    fail "a run stopped by SIGTERM and resumed differs from the uninterrupted one"
fi
# SIGTERM during the validation after the last update (a long one: 100,000 examples, seconds)
# ends the session before the test, which the resume then runs alone; the run went on to its test.
expect_status 0 "data prepare listops, a long validation" -- "$relpos" data prepare listops \
  --out "$tmp/listops_long_val" --train 64 --val 100000 --test 16 --min_length 10 --max_length 60 \
  --seed 1
last_update=(--set train.steps=2 --set train.log_every=1 --set data.dir="$tmp/listops_long_val")
"$relpos" train "$tmp/tiny.yaml" --out "$tmp/signalled_last" "${last_update[@]}" --quiet \
  >"$tmp/signal_out" 2>"$tmp/signal_err" &
pid=$!
for _ in $(seq 600); do grep -qs '"step": 2' "$tmp/signalled_last/metrics.jsonl" && break; sleep 0.05; done
kill -TERM "$pid"
wait "$pid"
status=$?
[[ $status -eq 143 ]] || fail "SIGTERM in the last validation: exit $status: $(cat "$tmp/signal_err")"
grep -q "^stopped at step 2 by SIGTERM; continue with --resume" "$tmp/signal_out" ||
  fail "SIGTERM in the last validation says: $(cat "$tmp/signal_out" "$tmp/signal_err")"
[[ ! -e $tmp/signalled_last/summary.json ]] || fail "SIGTERM in the last validation: the test ran"
expect_status 0 "train --resume after SIGTERM in the last validation" -- "$relpos" train \
  "$tmp/tiny.yaml" --out "$tmp/signalled_last" "${last_update[@]}" --quiet \
  --resume "$tmp/signalled_last/checkpoints/last.h5"
grep -q '"steps": 2' "$tmp/signalled_last/summary.json" || fail "the resume did not test step 2"
[[ $(grep -c '"event": "eval"' "$tmp/signalled_last/metrics.jsonl") -eq 1 ]] ||
  fail "the resume validated again: $(cat "$tmp/signalled_last/metrics.jsonl")"
# The console's progress line and metrics.jsonl's train record show the same loss at a log step
# (both the mean since the previous record).
expect_status 0 "train, progress on stderr" -- "$relpos" train "$tmp/tiny.yaml" --out "$tmp/losses"
"$python" -c '
import json, re, sys
console = {int(m.group(1)): float(m.group(2)) for m in
           re.finditer(r"step (\d+)/\d+ \(\d+%\)  mean loss ([0-9.]+)", open(sys.argv[1]).read())}
records = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2])) if r["event"] == "train"}
assert records and set(records) <= set(console), (console, records)
for step, loss in records.items():
    assert abs(console[step] - loss) < 1e-4, (step, console[step], loss)
' "$tmp/err" "$tmp/losses/metrics.jsonl" || fail "the console and metrics.jsonl disagree on the loss"

# --stop-at-step on a validation step validates before it stops (the value exists once, after
# the resume too); the stop is reported once (stdout), the resume in the log.
expect_status 0 "train --stop-at-step at a validation step" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/stop_val" --stop-at-step 2
[[ $(cat "$tmp/out" "$tmp/err" | grep -c "stopped at step") -eq 1 ]] ||
  fail "the stop is not reported exactly once: $(cat "$tmp/out" "$tmp/err")"
expect_status 0 "resume after a stop at a validation step" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/stop_val" --resume "$tmp/stop_val/checkpoints/last.h5" --quiet
grep -q "resumed from $tmp/stop_val/checkpoints/last.h5 at step 2 of 4" "$tmp/stop_val/log.txt" ||
  fail "the resumed run does not say where it resumed: $(cat "$tmp/stop_val/log.txt")"
"$python" -c '
import json, sys
evals = [json.loads(l)["step"] for l in open(sys.argv[1]) if json.loads(l)["event"] == "eval"]
assert evals == [2, 4], evals
' "$tmp/stop_val/metrics.jsonl" || fail "a stop at a validation step lost or repeated it"

# A run directory or predictions file under a regular file: a clear error, exit 2.
touch "$tmp/plain_file"
expect_status 2 "run dir under a file" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/plain_file/run" --quiet
expect_error_line "run dir under a file" "relpos: \[train\] cannot create the run directory"
expect_status 2 "predictions under a file" -- "$relpos" eval "$tmp/run/checkpoints/last.h5" \
  --predictions "$tmp/plain_file/p.h5"
expect_error_line "predictions under a file" "relpos: \[predictions\] cannot create the folder"
# ... refused before the model and its data are loaded (a data folder that does not exist is not
# reached), where it used to be found after the whole evaluation.
expect_status 2 "predictions under a file, first" -- "$relpos" eval "$tmp/run/checkpoints/last.h5" \
  --predictions "$tmp/plain_file/p.h5" --data-dir "$tmp/no_such_data"
expect_error_line "predictions under a file, first" "relpos: \[predictions\] cannot create the folder"
# An output that is an input of the same command replaced it: `eval --predictions` wrote over
# the checkpoint it evaluates, `export --state` over the checkpoint, `import --out` over STATE.
cp "$tmp/run/checkpoints/last.h5" "$tmp/own.h5"
expect_status 2 "predictions over the checkpoint" -- "$relpos" eval "$tmp/own.h5" \
  --predictions "$tmp/./own.h5"
expect_error_line "predictions over the checkpoint" "relpos: \[predictions\] '.*own.h5' is the same file as"
cmp -s "$tmp/own.h5" "$tmp/run/checkpoints/last.h5" || fail "eval --predictions changed its checkpoint"

# User errors: exit 2, one line.
expect_status 2 "unknown config key" -- "$relpos" train "$tmp/tiny.yaml" --set model.layers=2
expect_error_line "unknown config key" "relpos: \[config\] unknown key 'model.layers'"
expect_status 2 "missing config" -- "$relpos" train "$tmp/none.yaml"
expect_error_line "missing config" "relpos: \[config\] cannot read"
expect_status 2 "bad override" -- "$relpos" train "$tmp/tiny.yaml" --set nonsense
expect_error_line "bad override" "relpos: \[config\] override 'nonsense'"
expect_status 2 "unknown attention option" -- "$relpos" train "$tmp/tiny.yaml" \
  --set model.attention.feature_mpa=relu
expect_error_line "unknown attention option" "relpos: \[model.attention\] unknown option 'feature_mpa'"
expect_status 2 "missing data" -- "$relpos" train "$tmp/tiny.yaml" --set data.dir="$tmp/nowhere"
expect_error_line "missing data" "relpos: \[data\] no folder"
# The run folder: a run that fails at start writes nothing; a folder holding a run is refused
# (its files untouched) unless the run resumes or --overwrite starts it afresh.
for bad in "model.attention.feature_map=elu2" "data.dir=$tmp/nowhere"; do
  expect_status 2 "a failing start ($bad)" -- "$relpos" train "$tmp/tiny.yaml" \
    --out "$tmp/never" --set "$bad" --quiet
  [[ ! -e $tmp/never ]] || fail "a run that failed at start ($bad) wrote $(ls -R "$tmp/never")"
done
before=$(md5sum "$tmp/run/config.yaml" "$tmp/run/metrics.jsonl" "$tmp/run/log.txt")
expect_status 2 "train into a folder holding a run" -- "$relpos" train "$tmp/tiny.yaml" \
  --set train.steps=2 --quiet
expect_error_line "train into a folder holding a run" \
  "relpos: \[train\] '$tmp/run' already holds a run (config.yaml is there): continue it with --resume"
[[ $(md5sum "$tmp/run/config.yaml" "$tmp/run/metrics.jsonl" "$tmp/run/log.txt") == "$before" ]] ||
  fail "a refused run changed the files of the run in its folder"
cp -r "$tmp/run" "$tmp/again"
expect_status 0 "train --overwrite" -- "$relpos" train "$tmp/tiny.yaml" --out "$tmp/again" \
  --set train.steps=2 --set train.eval_every=1 --overwrite --quiet
"$python" -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert max(r.get("step", 0) for r in records) == 2, records
' "$tmp/again/metrics.jsonl" || fail "--overwrite kept records of the run it replaced"
[[ $(grep -c "^\[.*\] run '" "$tmp/again/log.txt") -eq 1 ]] ||
  fail "--overwrite kept the old log: $(cat "$tmp/again/log.txt")"
grep -q "steps: 2" "$tmp/again/config.yaml" || fail "--overwrite kept the old config.yaml"
# Flags that would be ignored are refused: --overwrite with --resume (it resumed and kept the
# run's files), --allow-config-change without --resume.
expect_status 2 "--overwrite with --resume" -- "$relpos" train "$tmp/tiny.yaml" --out "$tmp/again" \
  --resume "$tmp/again/checkpoints/last.h5" --overwrite --quiet
expect_error_line "--overwrite with --resume" "relpos: \[train\] --resume excludes --overwrite"
expect_status 2 "--allow-config-change alone" -- "$relpos" train "$tmp/tiny.yaml" \
  --out "$tmp/fresh" --allow-config-change --quiet
expect_error_line "--allow-config-change alone" \
  "relpos: \[train\] --allow-config-change requires --resume"
[[ ! -e $tmp/fresh ]] || fail "--allow-config-change alone made a run directory"

head -c 2000 "$tmp/run/checkpoints/last.h5" >"$tmp/truncated.h5"
expect_status 2 "truncated checkpoint" -- "$relpos" eval "$tmp/truncated.h5"
expect_error_line "truncated checkpoint" "relpos: \[checkpoint\]"
expect_status 2 "eval without checkpoint" -- "$relpos" eval
expect_status 2 "unknown command" -- "$relpos" trian
expect_error_line "unknown command" "relpos: \[relpos\] unknown command 'trian'; known: train, "
# An unknown subcommand said "A subcommand is required"; --version took any words after it.
expect_status 2 "unknown subcommand" -- "$relpos" data nosuch
expect_error_line "unknown subcommand" "relpos: \[data\] unknown subcommand 'nosuch'; known: prepare$"
expect_status 2 "--version with more" -- "$relpos" --version extra
expect_error_line "--version with more" "relpos: \[relpos\] --version takes no other arguments"
# A whole number past the option's type was "not an integer".
expect_status 2 "--max-depth 10^11" -- "$relpos" data prepare listops --out "$tmp/ld" \
  --max-depth 100000000000
expect_error_line "--max-depth 10^11" \
  "relpos: \[data prepare\] option 'max_depth' must be an integer from -2147483648 to 2147483647, got '100000000000'$"
expect_status 2 "generate --tokens 10^20" -- "$relpos" generate x.h5 --prompt a \
  --tokens 100000000000000000000
expect_error_line "generate --tokens 10^20" \
  "relpos: \[generate\] --tokens expects an integer from -9223372036854775808 to 9223372036854775807"
# Datasets that are only described take no --out or options (imdb --out DIR printed how to get
# it and exit 0, as if it had written DIR); an option given twice was last-wins.
expect_status 2 "data prepare imdb --out" -- "$relpos" data prepare imdb --out "$tmp/imdb"
expect_error_line "data prepare imdb --out" "relpos: \[data prepare\] imdb is not made here, so it takes no --out"
expect_status 0 "data prepare imdb" -- "$relpos" data prepare imdb
expect_status 2 "an option twice" -- "$relpos" data prepare listops --out "$tmp/ld" --seed 1 --seed 2
expect_error_line "an option twice" "relpos: \[data prepare\] option 'seed' is given twice$"
[[ ! -e $tmp/ld ]] || fail "a refused data prepare made its --out folder"

# Language modelling end to end on real English (the GPL-3 text every Debian system ships):
# train a tiny Transformer-XL, evaluate it (also with a longer memory), write and check its
# per-character predictions, and sample text from it. (The mechanics, not generalization:
# valid and test repeat part of the training text.)
corpus=$tmp/corpus
mkdir -p "$corpus"
english=/usr/share/common-licenses/GPL-3
cp "$english" "$corpus/train.txt"  # every byte of valid and test occurs in training
tail -c +20001 "$english" | head -c 3000 >"$corpus/valid.txt"
tail -c +23001 "$english" | head -c 3000 >"$corpus/test.txt"
cat >"$tmp/lm.yaml" <<YAML
model: {type: transformer_xl, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32,
        dropout: 0.0, attention_dropout: 0.0, mem_len: 8}
data: {dataset: chars, dir: $corpus, batch_size: 4, tgt_len: 8}
optimizer: {type: adam, lr: 0.003}
train: {steps: 6, eval_every: 3, log_every: 3, out: $tmp/lm}
eval: {max_batches: 0}
YAML
expect_status 0 "train lm" -- "$relpos" train "$tmp/lm.yaml" --quiet
grep -q "transformer_xl: test bpc" "$tmp/out" || fail "lm train prints no bpc line: $(cat "$tmp/out")"
# Example limits of classifiers were accepted by a language model and ignored.
expect_status 2 "lm with data.eval_limit" -- "$relpos" train "$tmp/lm.yaml" --quiet \
  --set data.eval_limit=5 --out "$tmp/lm_limited"
expect_error_line "lm with data.eval_limit" \
  "relpos: \[config\] data.train_limit and data.eval_limit count a classifier's examples"
[[ ! -e $tmp/lm_limited ]] || fail "a refused lm run left its folder"
expect_status 0 "eval lm --json" -- "$relpos" eval "$tmp/lm/checkpoints/last.h5" --json
cp "$tmp/out" "$tmp/lm_eval.json"
expect_status 0 "eval lm with a longer memory" -- "$relpos" eval "$tmp/lm/checkpoints/last.h5" \
  --set eval.mem_len=32 --set eval.tgt_len=5 --set eval.same_length=true
grep -q "(2999 tokens" "$tmp/out" || fail "lm eval does not predict every test character: $(cat "$tmp/out")"
expect_status 0 "eval lm --predictions" -- "$relpos" eval "$tmp/lm/checkpoints/last.h5" \
  --predictions "$tmp/lm_pred.h5"
cp "$tmp/lm/checkpoints/last.h5" "$tmp/lm_own.h5"
expect_status 2 "export --state over the checkpoint" -- "$relpos" export reference \
  "$tmp/lm_own.h5" --state "$tmp/lm_own.h5" --hparams "$tmp/lm_h.json"
expect_error_line "export --state over the checkpoint" "relpos: \[export\] '.*' is the same file as"
expect_status 2 "export --state and --hparams one file" -- "$relpos" export reference \
  "$tmp/lm_own.h5" --state "$tmp/lm_x" --hparams "$tmp/./lm_x"
cmp -s "$tmp/lm_own.h5" "$tmp/lm/checkpoints/last.h5" || fail "export changed its checkpoint"
[[ ! -e $tmp/lm_x ]] || fail "a refused export wrote its output"
expect_status 0 "export reference" -- "$relpos" export reference "$tmp/lm_own.h5" \
  --state "$tmp/lm_state.h5" --hparams "$tmp/lm_h.json"
cp "$tmp/lm_state.h5" "$tmp/lm_state_copy.h5"
# A model with token ids its data never holds (model.vocab_size 120 over the text's symbols) and
# an untied output weight goes out and back: n_token 120 beside fewer symbols (import refused it
# as "symbols for n_token"), crit.out_layers.0.weight its own (export refused untied weights).
expect_status 0 "train lm with ids past its data" -- "$relpos" train "$tmp/lm.yaml" --quiet \
  --set model.vocab_size=120 --set model.tie_weights=false --set train.steps=1 --out "$tmp/lm_wide"
expect_status 0 "export a wide vocabulary" -- "$relpos" export reference \
  "$tmp/lm_wide/checkpoints/last.h5" --state "$tmp/wide_state.h5" --hparams "$tmp/wide.json"
expect_status 0 "import a wide vocabulary" -- "$relpos" import reference "$tmp/wide_state.h5" \
  --hparams "$tmp/wide.json" --out "$tmp/wide_imported.h5" --data-dir "$corpus"
expect_status 0 "export the import again" -- "$relpos" export reference "$tmp/wide_imported.h5" \
  --state "$tmp/wide_state2.h5" --hparams "$tmp/wide2.json"
cmp -s "$tmp/wide.json" "$tmp/wide2.json" || fail "the wide model's H.json changed out and back"
"$python" -c '
import json, sys
h = json.load(open(sys.argv[1]))
assert h["n_token"] == 120 and 0 < len(h["symbols"]) < 120, (h["n_token"], len(h["symbols"]))
assert h["tie_weight"] is False, h["tie_weight"]
' "$tmp/wide.json" || fail "the wide model exports n_token 120 beside its symbols"
if "$python" -c "import h5py" 2>/dev/null; then
  "$python" -c '
import h5py, numpy, sys
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
assert sorted(a) == sorted(b) and all(numpy.array_equal(a[k][()], b[k][()]) for k in a)
emb, out = a["word_emb.emb_layers.0.weight"][()], a["crit.out_layers.0.weight"][()]
assert emb.shape == out.shape == (120, 16) and not numpy.array_equal(emb, out)
' "$tmp/wide_state.h5" "$tmp/wide_state2.h5" || fail "the wide model's state changed out and back"
fi
expect_status 2 "import --out over STATE" -- "$relpos" import reference "$tmp/lm_state.h5" \
  --hparams "$tmp/lm_h.json" --out "$tmp/lm_state.h5"
expect_error_line "import --out over STATE" "relpos: \[import\] '.*' is the same file as"
cmp -s "$tmp/lm_state.h5" "$tmp/lm_state_copy.h5" || fail "import --out changed its STATE"
# A FIFO as STATE or H.json blocked import for ever; a folder as H.json was an internal error.
mkfifo "$tmp/lm_fifo"
expect_status 2 "import a FIFO" -- timeout 60 "$relpos" import reference "$tmp/lm_fifo" \
  --hparams "$tmp/lm_h.json" --out "$tmp/lm_imported.h5"
expect_error_line "import a FIFO" "relpos: \[import\] '.*lm_fifo' is not a regular file"
expect_status 2 "import --hparams a FIFO" -- timeout 60 "$relpos" import reference \
  "$tmp/lm_state.h5" --hparams "$tmp/lm_fifo" --out "$tmp/lm_imported.h5"
expect_error_line "import --hparams a FIFO" "relpos: \[import\] .*lm_fifo: cannot read: not a regular file"
expect_status 2 "import --hparams a folder" -- "$relpos" import reference "$tmp/lm_state.h5" \
  --hparams "$tmp" --out "$tmp/lm_imported.h5"
expect_error_line "import --hparams a folder" "relpos: \[import\] .*: cannot read: not a regular file"
echo '[1, 2]' >"$tmp/lm_array.json"
expect_status 2 "import --hparams a JSON array" -- "$relpos" import reference "$tmp/lm_state.h5" \
  --hparams "$tmp/lm_array.json" --out "$tmp/lm_imported.h5"
expect_error_line "import --hparams a JSON array" \
  "relpos: \[import\] '.*lm_array.json' must hold a JSON object of hyper-parameters, not array$"
# Invalid JSON is named by line and column, without nlohmann's exception id.
echo "xx" >"$tmp/lm_bad.json"
expect_status 2 "import --hparams not JSON" -- "$relpos" import reference "$tmp/lm_state.h5" \
  --hparams "$tmp/lm_bad.json" --out "$tmp/lm_imported.h5"
expect_error_line "import --hparams not JSON" \
  "relpos: \[import\] .*lm_bad.json: not valid JSON: parse error at line 1, column 1"
if "$python" -c "import h5py" 2>/dev/null; then
  "$python" -c '
import h5py, json, math, sys
f = h5py.File(sys.argv[1], "r")
targets, log_prob = f["targets"][:], f["log_prob"][:]
text = open(sys.argv[3], "rb").read()
vocab = sorted(set(open(sys.argv[4], "rb").read()))
assert len(targets) == len(text) - 1, (len(targets), len(text))
assert [vocab[t] for t in targets] == list(text[1:]), "targets are not the text in order"
assert (log_prob <= 0).all()
bpc = -log_prob.astype("float64").mean() / math.log(2)
m = json.load(open(sys.argv[2]))
assert abs(bpc - m["bpc"]) < 1e-4, (bpc, m["bpc"])
' "$tmp/lm_pred.h5" "$tmp/lm_eval.json" "$corpus/test.txt" "$corpus/train.txt" ||
    fail "lm predictions are not every test character in order with the eval bpc"
fi
expect_status 0 "generate" -- "$relpos" generate "$tmp/lm/checkpoints/last.h5" \
  --prompt "the " --tokens 40 --seed 3
cp "$tmp/out" "$tmp/gen1"
[[ $(head -c 4 "$tmp/gen1") == "the " ]] || fail "generate does not start with the prompt"
[[ $(wc -c <"$tmp/gen1") -eq 45 ]] || fail "generate printed $(wc -c <"$tmp/gen1") bytes, expected 45"
expect_status 0 "generate again" -- "$relpos" generate "$tmp/lm/checkpoints/last.h5" \
  --prompt "the " --tokens 40 --seed 3
cmp -s "$tmp/gen1" "$tmp/out" || fail "generate is not deterministic for a seed"
# --top-k 1 is the most likely character every step: the seed and the temperature change
# nothing, and a nucleus too small for a second character is the same.
expect_status 0 "generate --top-k 1" -- "$relpos" generate "$tmp/lm/checkpoints/last.h5" \
  --prompt "the " --tokens 40 --seed 3 --top-k 1
cp "$tmp/out" "$tmp/greedy"
for args in "--seed 4 --top-k 1 --temperature 7" "--seed 5 --top-p 1e-9" "--top-k 1 --top-p 0.5"; do
  expect_status 0 "generate $args" -- "$relpos" generate "$tmp/lm/checkpoints/last.h5" \
    --prompt "the " --tokens 40 $args
  cmp -s "$tmp/greedy" "$tmp/out" || fail "generate $args is not the greedy text"
done
expect_status 0 "generate --top-k 3 --top-p 0.9" -- "$relpos" generate \
  "$tmp/lm/checkpoints/last.h5" --prompt "the " --tokens 40 --top-k 3 --top-p 0.9 --temperature 1e-310
for bad in "--temperature 0" "--temperature -1" "--temperature nan" "--temperature inf" \
  "--top-k -1" "--top-p 0" "--top-p 1.5"; do
  expect_status 2 "generate $bad" -- "$relpos" generate "$tmp/lm/checkpoints/last.h5" \
    --prompt "the " --tokens 3 $bad
  expect_error_line "generate $bad" "relpos: \[generate\] --"
done
# Characters are written as they are drawn: a sample that would never end still streams.
streamed=$(timeout 60 "$relpos" generate "$tmp/lm/checkpoints/last.h5" --prompt "the " \
  --tokens 9223372036854775807 2>/dev/null | head -c 100 | wc -c)
[[ $streamed -eq 100 ]] || fail "generate --tokens 9223372036854775807 streamed $streamed bytes"
expect_status 2 "generate unknown byte" -- "$relpos" generate "$tmp/lm/checkpoints/last.h5" \
  --prompt $'\x01' --tokens 3
expect_error_line "generate unknown byte" "relpos: \[generate\] the prompt's byte 1"
expect_status 2 "generate on a classifier" -- "$relpos" generate "$tmp/run/checkpoints/last.h5" \
  --prompt "a" --tokens 3
expect_error_line "generate on a classifier" "relpos: \[generate\] .* is not a language-model"

# A checkpoint keeps the model.max_len its training resolved. Evaluated with a longer segment, a
# cosFormer model (M defaults to max_len) was silently another model, M following eval.tgt_len;
# now refused by name. The characters left after the rows are read in segments of tgt_len: with
# 400 rows they were one segment of 199, past what learned positions cover.
for lm_case in "cosformer:positions: none, attention: {type: linear, feature_map: cosformer}" \
  "learned:positions: learned"; do
  name=${lm_case%%:*}
  cat >"$tmp/lm_$name.yaml" <<YAML
model: {type: causal_lm, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, dropout: 0.0,
        attention_dropout: 0.0, mem_len: 0, ${lm_case#*:}}
data: {dataset: chars, dir: $corpus, batch_size: 4, tgt_len: 8}
optimizer: {type: adam, lr: 0.003}
train: {steps: 2, eval_every: 2, log_every: 2, out: $tmp/lm_$name}
YAML
  expect_status 0 "train causal_lm $name" -- "$relpos" train "$tmp/lm_$name.yaml" --quiet
done
expect_status 2 "eval cosformer with a longer segment" -- "$relpos" eval \
  "$tmp/lm_cosformer/checkpoints/last.h5" --set eval.tgt_len=16
expect_error_line "eval cosformer with a longer segment" \
  "relpos: \[config\] causal_lm's positions cover 9 keys (model.max_len 8) but eval.tgt_len 16 plus model.mem_len 0 make 16: raise model.max_len"
expect_status 2 "eval learned positions with a longer segment" -- "$relpos" eval \
  "$tmp/lm_learned/checkpoints/last.h5" --set eval.tgt_len=16
expect_error_line "eval learned positions with a longer segment" \
  "relpos: \[config\] causal_lm's positions cover 8 keys (model.max_len 8) but eval.tgt_len 16 plus model.mem_len 0 make 16: raise model.max_len"
expect_status 0 "eval with a tail longer than tgt_len" -- "$relpos" eval \
  "$tmp/lm_learned/checkpoints/last.h5" --set data.eval_batch_size=400
grep -q "(2999 tokens" "$tmp/out" || fail "eval with 400 rows: $(cat "$tmp/out")"

# With a memory and a table (FastRPB's covers tgt_len + mem_len keys), generate read a prompt in
# segments of max_len after the memory, past the table ("memory 8 + segment 16 = 24 keys exceed
# the 16"): it now reads what fits beside the memory.
cat >"$tmp/lm_fastrpb.yaml" <<YAML
model: {type: causal_lm, num_layers: 1, num_heads: 2, model_dim: 16, mlp_dim: 32, mem_len: 8,
        attention: {type: linear, feature_map: elu1}, positional: {type: fastrpb}}
data: {dataset: chars, dir: $corpus, batch_size: 4, tgt_len: 8}
optimizer: {type: adam, lr: 0.003}
train: {steps: 2, eval_every: 2, log_every: 2, out: $tmp/lm_fastrpb}
YAML
expect_status 0 "train causal_lm fastrpb with memory" -- "$relpos" train "$tmp/lm_fastrpb.yaml" --quiet
prompt=$(head -c 50 "$corpus/train.txt" | tr '\n' ' ')
expect_status 0 "generate after a prompt past the table" -- "$relpos" generate \
  "$tmp/lm_fastrpb/checkpoints/last.h5" --prompt "$prompt" --tokens 20 --seed 1
[[ $(wc -c <"$tmp/out") -eq 71 ]] || fail "generate after a long prompt printed $(wc -c <"$tmp/out") bytes, expected 71"
expect_status 2 "generate with a memory that fills the table" -- "$relpos" generate \
  "$tmp/lm_fastrpb/checkpoints/last.h5" --prompt "$prompt" --tokens 2 --set eval.mem_len=16
expect_error_line "generate with a memory that fills the table" \
  "relpos: \[generate\] causal_lm's positions cover 16 keys and a memory of 16 (eval.mem_len) fills them"

if [[ $failures -gt 0 ]]; then
  echo "$failures CLI check(s) failed" >&2
  exit 1
fi
echo "CLI: all checks passed"
