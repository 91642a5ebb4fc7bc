#!/usr/bin/env bash
# The standalone benchmark programs (tools/bench/relpos_bench_*): --help from their CLI11
# definitions; a bad number, an unknown flag or a missing required one is exit 2 with one line
# naming the program and the flag; a tiny run prints the JSON lines the run_*_bench.sh scripts
# read; the GPU scripts' --help and their OUT_DIR argument. Timings are never asserted.
# Usage: test_bench_programs.sh BENCH_BUILD_DIR SOURCE_DIR
set -uo pipefail
bin=$1
source_dir=$2
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/checks.sh"
# expect_error DESCRIPTION PATTERN -- COMMAND...: exit 2 and one stderr line matching PATTERN.
expect_error() {
  local what=$1 pattern=$2; shift 2
  expect_status 2 "$what" "$@"
  [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "$what: $(wc -l <"$tmp/err") lines on stderr"
  grep -q -- "$pattern" "$tmp/err" || fail "$what: stderr lacks '$pattern': $(cat "$tmp/err")"
}

for program in relpos_bench_ops relpos_bench_attention relpos_bench_loader \
  relpos_bench_train_step; do
  expect_status 0 "$program --help" -- "$bin/$program" --help
  grep -q "^usage: $program" "$tmp/out" || fail "$program --help prints no usage"
  expect_error "$program unknown flag" "^$program: .*--frobnicate" \
    -- "$bin/$program" --frobnicate --config x.yaml
done
expect_error "attention --batch x" "relpos_bench_attention: --batch: expected a number, got 'x'" \
  -- "$bin/relpos_bench_attention" --batch x
expect_error "attention --heads 0" "relpos_bench_attention: --heads: must be positive, got 0" \
  -- "$bin/relpos_bench_attention" --heads 0
expect_error "attention --lengths" "relpos_bench_attention: .*length.*abc" \
  -- "$bin/relpos_bench_attention" --lengths 64,abc
expect_error "attention unknown variant" "unknown" \
  -- "$bin/relpos_bench_attention" --filter no_such_variant
expect_error "attention --precision f16" "relpos_bench_attention: --precision: f16 not in {f32,bf16}" \
  -- "$bin/relpos_bench_attention" --precision f16
expect_error "ops --min-time -1" "relpos_bench_ops: --min-time: must be >= 0, got -1" \
  -- "$bin/relpos_bench_ops" --min-time -1
expect_error "ops unknown op" "relpos_bench_ops: .*unknown op 'nope'" \
  -- "$bin/relpos_bench_ops" --filter nope
expect_error "loader --epochs 0" "relpos_bench_loader: --epochs: must be positive, got 0" \
  -- "$bin/relpos_bench_loader" --epochs 0
expect_error "train_step without --config" "relpos_bench_train_step: --config is required" \
  -- "$bin/relpos_bench_train_step"
expect_error "train_step missing config" "relpos_bench_train_step: .*nowhere.yaml" \
  -- "$bin/relpos_bench_train_step" --config "$tmp/nowhere.yaml"

expect_status 0 "attention --json" -- "$bin/relpos_bench_attention" --json --filter softmax \
  --lengths 32,48 --batch 1 --heads 2 --dim 8 --min-time 0
[[ $(grep -c '"variant": "softmax"' "$tmp/out") -eq 2 ]] || fail "attention: $(cat "$tmp/out")"
expect_status 0 "ops --json" -- "$bin/relpos_bench_ops" --json --filter add --min-time 0
grep -q '"op": "add"' "$tmp/out" || fail "ops: $(cat "$tmp/out")"
expect_status 0 "train_step" -- "$bin/relpos_bench_train_step" \
  --config "$source_dir/configs/demo/mnist_sikf_fastrpb2d.yaml" --batch 2 --min-time 0 \
  --set model.num_layers=1
grep -q '"impl": "relpos", "config": "demo_mnist_sikf_fastrpb2d", "batch": 2' "$tmp/out" ||
  fail "train_step: $(cat "$tmp/out")"
expect_status 0 "train_step --profile" -- "$bin/relpos_bench_train_step" \
  --config "$source_dir/configs/demo/mnist_sikf_fastrpb2d.yaml" --batch 2 --min-time 0 \
  --set model.num_layers=1 --profile 2
grep -q '"impl": "relpos"' "$tmp/out" || fail "train_step --profile: no JSON line: $(cat "$tmp/out")"
for row in "^profile: 2 updates on cpu" "^matmul " "^encoder.layers.0.attn "; do
  grep -q "$row" "$tmp/err" || fail "train_step --profile: no '$row' on stderr: $(cat "$tmp/err")"
done

# The GPU scripts take OUT_DIR first: --help anywhere prints their header, and an option where
# OUT_DIR belongs is refused before anything is made (it once became `mkdir -p --help` and a
# build of the cuda preset).
for script in tools/bench/run_gpu_figures.sh tools/gpu-check.sh; do
  name=$(basename "$script")
  expect_status 0 "$name --help" -- "$source_dir/$script" --help
  grep -q "^# .*GPU" "$tmp/out" || fail "$name --help prints no header: $(cat "$tmp/out")"
  (cd "$tmp" && "$source_dir/$script" --skip-bench x >"$tmp/out" 2>"$tmp/err")
  [[ $? -eq 2 ]] || fail "$name with an option first: not exit 2"
  grep -q "the first argument is OUT_DIR, got '--skip-bench'" "$tmp/err" ||
    fail "$name with an option first: $(cat "$tmp/err")"
  [[ ! -e "$tmp/x" ]] || fail "$name with an option first made its output folder"
done

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "bench programs: all checks passed"
