#!/usr/bin/env bash
# `relpos reproduce` end to end at tiny scale on generated data: table2 (MNIST, every row, our
# value and the paper's), lm (every language model, bpc against the evaluation memory), a grid
# interrupted after k cells resumes without rerunning them, a
# cell whose data is missing is reported in the table instead of failing the grid, --jobs 2
# trains the same runs two at a time, and user errors exit 2. Usage: test_reproduce.sh RELPOS_BINARY (run from anywhere; uses the repo's
# configs/). One thread keeps it fast on a loaded machine.
set -uo pipefail
relpos=$(realpath "$1")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# 28x28 digits of 10 classes: class c lights a bar at row band c (values 150-255) over noise.
/usr/bin/python3 - "$tmp/data/mnist" <<'PY'
import os, struct, sys, random
out = sys.argv[1]
os.makedirs(out)
rng = random.Random(0)
def write(prefix, n):
    images, labels = bytearray(), bytearray()
    for i in range(n):
        c = i % 10
        for r in range(28):
            for col in range(28):
                lit = 2 + 2 * c <= r < 4 + 2 * c
                images.append(rng.randint(150, 255) if lit else rng.randint(0, 60))
        labels.append(c)
    with open(f"{out}/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + images)
    with open(f"{out}/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels)
write("train", 500)
write("t10k", 100)
PY

cd "$root" || exit 1
run() { "$relpos" reproduce table2 --scale tiny --data-dir "$tmp/data" --out "$tmp/rep" "$@"; }

# An interrupted grid: two cells done.
run --only original_ >"$tmp/out1" 2>"$tmp/err1" || fail "first part of the grid failed: $(cat "$tmp/err1")"
first=$(stat -c %Y "$tmp/rep/mnist/original_none/seed0/summary.json" 2>/dev/null)
[[ -n $first ]] || fail "the first part wrote no summary"
sleep 1
run >"$tmp/out2" 2>"$tmp/err2" || fail "the whole grid failed: $(cat "$tmp/err2")"
[[ $(grep -c "(done, skipped)" "$tmp/err2") -eq 2 ]] ||
  fail "resume did not skip exactly the 2 finished cells: $(cat "$tmp/err2")"
[[ $(stat -c %Y "$tmp/rep/mnist/original_none/seed0/summary.json") == "$first" ]] ||
  fail "a finished cell was rerun"
grep -q "cell 10/10" "$tmp/err2" || fail "no progress line per cell"

/usr/bin/python3 - "$tmp/rep/table.md" "$tmp/rep/table.csv" <<'PY' || fail "table check failed"
import csv, re, sys
md = open(sys.argv[1]).read().splitlines()
assert md[0].startswith("# table2 reproduced: scale tiny, device cpu"), md[0]
rows = [l for l in md if l.startswith("| mnist |")]
assert len(rows) == 10, len(rows)
for r in rows:
    cells = [c.strip() for c in r.strip("|").split("|")]
    assert re.fullmatch(r"\d+\.\d\d", cells[3]), r   # ours, best checkpoint
    assert re.fullmatch(r"\d+\.\d\d", cells[4]), r   # ours, last
    assert re.fullmatch(r"\d+\.\d\d", cells[5]), r   # ours, accuracy
    assert re.fullmatch(r"\d+\.\d+ ± \d+\.\d+", cells[6]), r  # the paper's
# The paired differences: one row per model, ours from 1 seed, the paper's from its table.
at = md.index("## With − without FastRPB 2D, paired by seed (macro-F1 points, best checkpoint)")
pairs = [l for l in md[at:] if l.startswith("| ") and "model" not in l]
assert len(pairs) == 5, pairs
sikf = [l for l in pairs if l.startswith("| linear_sikf |")][0]
assert re.fullmatch(r"\| linear_sikf \| [+-]\d+\.\d\d ± 0\.00 \| [01] of 1 \| \+0\.88 \|", sikf), sikf
table = list(csv.DictReader(open(sys.argv[2])))
assert len(table) == 10 and all(t["seeds_done"] == "1" for t in table), table
# The generated task is easy: at least one model learns it within the tiny budget.
assert max(float(t["best_mean"]) for t in table) > 50, table
PY

# --jobs 2: the linear_elu cells' two runs at once, each a child `relpos train`, give the bits of
# the runs trained one at a time above; their consoles are removed. A run that fails in its child
# (its run directory is a file) is named in the table with its error and its console kept.
"$relpos" reproduce table2 --scale tiny --data-dir "$tmp/data" --out "$tmp/rep_jobs" \
  --only linear_elu --jobs 2 >/dev/null 2>"$tmp/err_jobs" || fail "--jobs 2 failed: $(cat "$tmp/err_jobs")"
for pe in none fastrpb2d; do
  /usr/bin/python3 - "$tmp/rep/mnist/linear_elu_$pe/seed0/summary.json" \
    "$tmp/rep_jobs/mnist/linear_elu_$pe/seed0/summary.json" <<'PY' || fail "--jobs 2: $pe differs"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for key in ("test_best", "test_last", "val_best", "steps"):
    assert a[key] == b[key], (key, a[key], b[key])
PY
  grep -q "linear_elu_$pe seed 0: test accuracy" "$tmp/err_jobs" || fail "--jobs 2: no result line for $pe"
done
[[ -z $(find "$tmp/rep_jobs" -name '*.log') ]] || fail "--jobs 2 left a console of a finished run"
# --jobs 2 --resume continues an interrupted run (its checkpoint, no summary) in its child from
# the checkpoint: the child is asked to resume, never to resume and start afresh at once (which
# `relpos train` refuses).
rm "$tmp/rep_jobs/mnist/linear_elu_none/seed0/summary.json"
"$relpos" reproduce table2 --scale tiny --data-dir "$tmp/data" --out "$tmp/rep_jobs" \
  --only linear_elu_none --jobs 2 --resume >/dev/null 2>"$tmp/err_resume" ||
  fail "--jobs 2 --resume failed: $(cat "$tmp/err_resume")"
grep -q "resumed from .*linear_elu_none/seed0/checkpoints/last.h5" \
  "$tmp/rep_jobs/mnist/linear_elu_none/seed0/log.txt" ||
  fail "--jobs 2 --resume did not resume: $(cat "$tmp/rep_jobs/table.md")"
grep -q "failed" "$tmp/rep_jobs/table.md" && fail "--jobs 2 --resume: $(cat "$tmp/rep_jobs/table.md")"
mkdir -p "$tmp/rep_fail/mnist/linear_elu_none" && touch "$tmp/rep_fail/mnist/linear_elu_none/seed0"
"$relpos" reproduce table2 --scale tiny --data-dir "$tmp/data" --out "$tmp/rep_fail" \
  --only linear_elu_none --jobs 2 >/dev/null 2>"$tmp/err_fail" || fail "--jobs: a failed run failed the grid"
grep -q "failed (exit 2): .*(its console: .*seed0.log)" "$tmp/rep_fail/table.md" ||
  fail "--jobs: the failed run is not named in the table: $(cat "$tmp/rep_fail/table.md")"
[[ -s $tmp/rep_fail/mnist/linear_elu_none/seed0.log ]] || fail "--jobs: the failed run's console is gone"
"$relpos" reproduce table1 --jobs 2 >/dev/null 2>"$tmp/err_j1"; [[ $? -eq 2 ]] || fail "table1 --jobs 2: not exit 2"
grep -q "only table2 trains runs at once" "$tmp/err_j1" || fail "table1 --jobs 2: $(cat "$tmp/err_j1")"
"$relpos" reproduce table2 --jobs 0 >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "--jobs 0: not exit 2"

# A torn summary.json (a run's report cut short): the table names it instead of showing nan.
cp -r "$tmp/rep" "$tmp/rep_torn"
summary=$tmp/rep_torn/mnist/original_none/seed0/summary.json
head -c 40 "$summary" >"$summary.cut" && mv "$summary.cut" "$summary"
"$relpos" reproduce table2 --scale tiny --runs "$tmp/rep_torn" --out "$tmp/rep_torn_table" \
  >/dev/null 2>"$tmp/err_torn" || fail "a torn summary failed the report: $(cat "$tmp/err_torn")"
grep -q "torn summary: " "$tmp/rep_torn_table/table.md" ||
  fail "a torn summary is not named in the table: $(cat "$tmp/rep_torn_table/table.md")"
grep -qi "| nan" "$tmp/rep_torn_table/table.md" && fail "the table shows nan for a torn summary"
echo '{"test_best": {}, "test_last": {}}' >"$summary"
"$relpos" reproduce table2 --scale tiny --runs "$tmp/rep_torn" --out "$tmp/rep_torn_table" \
  >/dev/null 2>&1 || fail "a summary without accuracies failed the report"
grep -q "lacks the test accuracies" "$tmp/rep_torn_table/table.md" ||
  fail "a summary without accuracies is not named in the table"

# Missing data: reported in the table, the grid still exits 0.
"$relpos" reproduce table1 --scale tiny --data-dir "$tmp/nowhere" --out "$tmp/rep1" \
  --only lra/text/linear_sikf_none >"$tmp/out3" 2>"$tmp/err3" || fail "missing data failed the grid"
grep -q "data missing: \[data\] no folder" "$tmp/rep1/table.md" ||
  fail "missing data not reported in the table: $(cat "$tmp/rep1/table.md")"
grep -q "63.37 ± 1.4\|61.64 ± 0.82" "$tmp/rep1/table.md" || fail "the paper's value is missing"

# --runs reports the runs it is given and trains nothing: table3 over the table2 grid finds no
# Table 1 cell there and says so for each, without starting one.
"$relpos" reproduce table3 --scale tiny --data-dir "$tmp/data" --runs "$tmp/rep" \
  --out "$tmp/rep3" --only lra/listops/original_none >"$tmp/out6" 2>"$tmp/err6" ||
  fail "table3 --runs failed"
grep -q "not run: no finished run in" "$tmp/rep3/table.md" ||
  fail "table3 --runs does not report the missing runs: $(cat "$tmp/rep3/table.md")"
[[ ! -e $tmp/rep/lra ]] || fail "table3 --runs trained a Table 1 cell"
# No GPU: --device cuda is refused before any cell runs.
if ! nvidia-smi >/dev/null 2>&1; then
  "$relpos" reproduce table2 --device cuda --out "$tmp/rep_cuda" >/dev/null 2>"$tmp/err7"
  [[ $? -eq 2 ]] || fail "reproduce --device cuda without a GPU: not exit 2"
  grep -q "no CUDA device is visible" "$tmp/err7" || fail "reproduce --device cuda: $(cat "$tmp/err7")"
  [[ ! -e $tmp/rep_cuda ]] || fail "reproduce --device cuda without a GPU made its output folder"
fi

# `all`: every table into one folder and report.md (figure3's bench.json is there already, as in a
# resumed run, so the bench is not run again here).
mkdir -p "$tmp/all/figures"
"$relpos" bench attention --lengths 64 --filter softmax --json-out "$tmp/all/figures/bench.json" \
  >/dev/null 2>&1 || fail "bench for figure3 failed"
"$relpos" reproduce all --scale tiny --only original_none --data-dir "$tmp/data" --out "$tmp/all" \
  >"$tmp/out8" 2>"$tmp/err8" || fail "reproduce all failed: $(cat "$tmp/err8")"
for section in "# The FastRPB paper reproduced at scale \`tiny\`" \
  "- command: \`relpos reproduce all --scale tiny --only original_none" "- machine: " \
  "# table2 reproduced" "# table1 reproduced" "# table3 reproduced" "# Figures"; do
  grep -qF -- "$section" "$tmp/all/report.md" || fail "report.md lacks '$section'"
done
grep -q "^| mnist | original | none | [0-9]" "$tmp/all/report.md" || fail "report.md lacks the trained cell"
[[ -s $tmp/all/table2/mnist/original_none/seed0/summary.json ]] || fail "all: no table2 run"
grep -q "table2 cell 1/1: mnist/original_none seed 0$" "$tmp/err8" || fail "all: no progress line"

# A folder whose name holds a quote: the figures' shell commands still name it whole.
quote_dir="$tmp/it's here"
mkdir -p "$quote_dir/figures" && cp "$tmp/all/figures/bench.json" "$quote_dir/figures/"
"$relpos" reproduce all --scale tiny --only original_none --data-dir "$tmp/data" \
  --out "$quote_dir" >"$tmp/out9" 2>"$tmp/err9" || fail "all into a quoted folder: $(cat "$tmp/err9")"
[[ -s $quote_dir/report.md ]] || fail "all into a quoted folder wrote no report.md"
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  [[ -s $quote_dir/figures/curves-table2.png ]] ||
    fail "all into a quoted folder drew no curves: $(cat "$tmp/out9")"
fi

# The language-model table at tiny scale on a generated text: every model, its memory columns,
# the evaluations kept beside each run (a rerun neither trains nor evaluates again).
/usr/bin/python3 - "$tmp/data/moby-dick" <<'PY'
import os, random, sys
out = sys.argv[1]
os.makedirs(out)
rng = random.Random(1)
words = ["whale", "sea", "ship", "captain", "harpoon", "white", "deep", "call", "me"]
def text(n):
    s = []
    while sum(len(w) + 1 for w in s) < n:
        s.append(rng.choice(words))
    return " ".join(s) + ".\n"
for split, n in (("train", 30000), ("valid", 4000), ("test", 4000)):
    open(f"{out}/{split}.txt", "w").write(text(n))
PY
lm() { "$relpos" reproduce lm --scale tiny --data-dir "$tmp/data" --out "$tmp/lm" "$@"; }
lm >"$tmp/out_lm" 2>"$tmp/err_lm" || fail "reproduce lm failed: $(cat "$tmp/err_lm")"
/usr/bin/python3 - "$tmp/lm/table.md" "$tmp/lm/table.csv" <<'PY' || fail "lm table check failed"
import csv, re, sys
md = open(sys.argv[1]).read()
assert md.startswith("# lm reproduced: scale tiny, device cpu, 1 seed(s)"), md[:80]
rows = {r["model"]: r for r in csv.DictReader(open(sys.argv[2]))}
assert list(rows) == ["transformer_xl", "transformer_xl_no_memory", "transformer_lm",
                      "linear_sikf", "linear_sikf_fastrpb", "linear_sikf_recurrent"], list(rows)
for name, r in rows.items():
    assert r["seeds_done"] == "1", (name, r)
    assert 0 < float(r["bpc_best_mean"]) < 8, (name, r)
    assert abs(float(r["bpc_1x_mean"]) - float(r["bpc_best_mean"])) < 1e-9, (name, r)
# With a memory: all three multiples (FastRPB's weights cover its trained length only, and the
# table says so); without: the 1x value alone.
for name in ("transformer_xl", "linear_sikf"):
    assert rows[name]["mem_len"] == "32" and rows[name]["bpc_4x_mean"], rows[name]
for name in ("transformer_xl_no_memory", "transformer_lm", "linear_sikf_recurrent"):
    assert rows[name]["mem_len"] == "0" and not rows[name]["bpc_2x_mean"], rows[name]
assert rows["linear_sikf_fastrpb"]["problem"].startswith("2x memory: [config] causal_lm's positions "
    "cover 64 keys (model.max_len 64) but eval.tgt_len 32 plus eval.mem_len 64 make 96"), rows
assert re.search(r"^\| transformer_xl \| rel_xl \| 32 \| \d\.\d{3} \|", md, re.M), md
PY
evaluated=$(stat -c %Y "$tmp/lm/lm/transformer_xl/seed0/memory_eval.json" 2>/dev/null)
[[ -n $evaluated ]] || fail "reproduce lm kept no memory_eval.json"
sleep 1
lm >/dev/null 2>"$tmp/err_lm2" || fail "reproduce lm rerun failed"
[[ $(grep -c "(done, skipped)" "$tmp/err_lm2") -eq 6 ]] || fail "lm rerun trained again"
[[ $(stat -c %Y "$tmp/lm/lm/transformer_xl/seed0/memory_eval.json") == "$evaluated" ]] ||
  fail "lm rerun evaluated again"

# User errors.
"$relpos" reproduce table9 >/dev/null 2>"$tmp/err4"; [[ $? -eq 2 ]] || fail "unknown table: not exit 2"
"$relpos" reproduce table2 --scale huge >/dev/null 2>"$tmp/err5"; [[ $? -eq 2 ]] || fail "bad scale: not exit 2"
[[ $(wc -l <"$tmp/err5") -eq 1 ]] || fail "bad scale: not one line"
"$relpos" reproduce --help >"$tmp/help" || fail "reproduce --help"
grep -q "^  cpu " "$tmp/help" || fail "reproduce --help does not list the scales of scales.yaml"
"$relpos" reproduce all --runs "$tmp/rep" >/dev/null 2>&1; [[ $? -eq 2 ]] || fail "all --runs: not exit 2"
# Each was accepted: --runs trains nothing, so --resume or --jobs beside it did nothing; a grid of
# 10^11 seeds; a rule whose `when` names a task no cell has matched nothing, silently.
refused_line() {  # WHAT PATTERN ARGS...: exit 2 and one stderr line matching PATTERN
  local what=$1 pattern=$2
  shift 2
  "$relpos" "$@" >/dev/null 2>"$tmp/err"
  local got=$?
  [[ $got -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -qE -- "$pattern" "$tmp/err" ||
    fail "$what: exit $got, stderr '$(cat "$tmp/err")' (expected one line /$pattern/)"
}
refused_line "--runs with --resume" "^relpos: \[reproduce\] --runs reports .*: --resume does not apply$" \
  reproduce table2 --runs "$tmp/rep" --resume
refused_line "--runs with --jobs" "^relpos: \[reproduce\] --runs reports .*: --jobs does not apply$" \
  reproduce table2 --runs "$tmp/rep" --jobs 2
refused_line "--seeds 10^11" "^relpos: \[reproduce\] --seeds 100000000000: at most 1000 runs per cell$" \
  reproduce table2 --seeds 100000000000
cp -r "$root/configs" "$tmp/configs_typo"
sed -i 's/when: {task: mnist}/when: {task: mnits}/' "$tmp/configs_typo/paper/scales.yaml"
refused_line "a when value no cell has" \
  "^relpos: \[reproduce\] '$tmp/configs_typo/paper/scales.yaml' line [0-9]+: scale [a-z-]+: when.task 'mnits' is no cell's task; known: .*mnist" \
  reproduce table2 --configs "$tmp/configs_typo" --out "$tmp/rep_typo"
[[ ! -e $tmp/rep_typo ]] || fail "a refused scales.yaml made the output folder"
# --help lists the scales of --configs (it read ./configs whatever --configs said).
sed -i 's/^  about: a smoke test of every cell/  about: SMOKE TEST of every cell/' "$tmp/configs_typo/paper/scales.yaml"
sed -i 's/when: {task: mnits}/when: {task: mnist}/' "$tmp/configs_typo/paper/scales.yaml"
"$relpos" reproduce --configs "$tmp/configs_typo" --help >"$tmp/help2" || fail "reproduce --configs --help"
grep -q "^  tiny   SMOKE TEST" "$tmp/help2" || fail "reproduce --help ignores --configs: $(grep '^  tiny' "$tmp/help2")"

if [[ $failures -gt 0 ]]; then
  echo "$failures reproduce check(s) failed" >&2
  exit 1
fi
echo "reproduce: all checks passed"
