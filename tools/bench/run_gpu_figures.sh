#!/usr/bin/env bash
# The GPU figures of tools/bench/RESULTS.md's attention and training-step tables, in one command
# for a lent GPU machine whose time is short: builds what they need (the `cuda` preset's tests
# and benchmarks), runs the CUDA test cases first (kernels that have run only in the CPU
# emulator may fail on a real device), then attention against PyTorch's
# scaled_dot_product_attention (f32 and bf16), the training steps against their PyTorch twins
# (f32 and bf16; Transformer-XL base with the fused attention and the composed one), and the
# MNIST demo's wall time when its digits are given. Each part runs under
# its own time limit and writes its table as it ends, so a part that overruns costs only itself;
# OUT_DIR/summary.md lists every part with its exit status and seconds. A part's limit is 150 s
# (120 with --quick), so all of them may need more than one 10-minute call: --parts splits them.
# Usage: tools/bench/run_gpu_figures.sh OUT_DIR [--parts LIST] [--mnist-data DIR] [--quick]
#   --parts: any of tests,attention,steps,lm,demo (default: all, in that order)
#   --mnist-data: a folder of MNIST IDX files (relpos data prepare mnist) for the demo's time
#   --quick: small lengths and batches and short timings, to check the script itself (also on
#            a machine without a GPU, with DEVICE=cpu)
# Environment: BUILD_DIR (default build/cuda; configured and built if absent), PYTHON (a python
# whose torch has CUDA; default python3), DEVICE (default cuda).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 2
for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then sed -n '2,18p' "$0"; exit 0; fi
done
out=${1:?usage: tools/bench/run_gpu_figures.sh OUT_DIR [--parts LIST] [--mnist-data DIR] [--quick]}
if [[ $out == -* ]]; then
  echo "run_gpu_figures.sh: the first argument is OUT_DIR, got '$out' (see --help)" >&2
  exit 2
fi
shift
parts="tests,attention,steps,lm,demo" mnist_data="" quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --parts) parts=$2; shift 2 ;;
    --mnist-data) mnist_data=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "run_gpu_figures.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
device=${DEVICE:-cuda}
export BUILD_DIR=${BUILD_DIR:-build/cuda}
export PYTHON=${PYTHON:-python3}
summary=$out/summary.md
echo "| part | exit | seconds | output |" >"$summary"
echo "|---|---:|---:|---|" >>"$summary"

# Sizes: the issue's shapes, or small ones with --quick.
if ((quick)); then
  lengths=256,512 min_time=0.05 base_batch=1 demo_batch=4 mnist_batch=2 limit=120
else
  lengths=1024,4096,16384 min_time=0.3 base_batch=22 demo_batch=16 mnist_batch=32 limit=150
fi

# part NAME SECONDS LOG COMMAND...: runs COMMAND under a time limit, stdout to LOG.md and stderr
# to LOG.log, and adds a row to the summary (exit 124: the limit was reached).
part() {
  local name=$1 seconds=$2 log=$3
  shift 3
  local start=$SECONDS
  timeout --signal=TERM --kill-after=10 "$seconds" "$@" >"$out/$log.md" 2>"$out/$log.log"
  local rc=$?
  echo "| $name | $rc | $((SECONDS - start)) | $log.md |" >>"$summary"
  echo "[gpu-figures] $name: exit $rc, $((SECONDS - start)) s"
}
wants() { [[ ",$parts," == *",$1,"* ]]; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1
  git log -1 --format='relpos %h %s' 2>/dev/null
} >"$out/environment.txt"

targets=(relpos relpos_core_tests relpos_autograd_tests relpos_bench_attention
         relpos_bench_train_step)
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DRELPOS_CUDA="$([[ $device == cuda ]] && echo ON || echo AUTO)" >"$out/configure.log" 2>&1 ||
    { echo "[gpu-figures] configure failed (configure.log)"; exit 1; }
fi
part build 600 build cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}"

if wants tests; then
  # The device's cases only (doctest filters ignore case): the CPU cases ran in CI.
  part "core tests (CUDA cases)" "$limit" tests_core \
    "$BUILD_DIR/tests/relpos_core_tests" --no-colors=true '-tc=*cuda*,*bf16*'
  part "autograd tests (CUDA cases)" "$limit" tests_autograd \
    "$BUILD_DIR/tests/relpos_autograd_tests" --no-colors=true '-tc=*cuda*,*bf16*'
fi
if wants attention; then
  for precision in f32 bf16; do
    part "attention vs SDPA, $precision" "$limit" "attention_$precision" \
      tools/bench/run_attention_bench.sh --device "$device" --precision "$precision" \
      --lengths "$lengths" --min-time "$min_time" --filter softmax,softmax_causal,rel_xl
  done
fi
if wants steps; then
  for precision in f32 bf16; do
    part "classifier steps, $precision" "$limit" "steps_$precision" \
      tools/bench/run_train_step_bench.sh --device "$device" --precision "$precision" \
      --demo-batch "$demo_batch" --mnist-batch "$mnist_batch" --min-time "$min_time"
  done
fi
if wants lm; then
  for precision in f32 bf16; do
    part "LM steps, $precision, fused attention" "$limit" "lm_${precision}_fused" \
      tools/bench/run_lm_step_bench.sh --device "$device" --precision "$precision" \
      --demo-batch "$demo_batch" --base-batch "$base_batch" --min-time "$min_time"
    part "TXL base step, $precision, composed attention" "$limit" "lm_${precision}_composed" \
      tools/bench/run_lm_step_bench.sh --device "$device" --precision "$precision" \
      --models base --base-batch "$base_batch" --min-time "$min_time" \
      --set model.attention.fused=false
  done
fi
if wants demo; then
  if [[ -n $mnist_data ]]; then
    # Trained in a scratch folder (its checkpoints stay out of OUT_DIR); its summary.json
    # (wall_time_s, test accuracy) is appended to the part's output.
    scratch=$(mktemp -d)
    demo_args=(train configs/demo/mnist_sikf_fastrpb2d.yaml --device "$device" --quiet
               --out "$scratch/run" --set "data.dir=$mnist_data")
    ((quick)) && demo_args+=(--set train.epochs=1)
    part "MNIST demo (wall_time_s in its output)" "$limit" demo_mnist \
      "$BUILD_DIR/tools/relpos" "${demo_args[@]}"
    cat "$scratch/run/summary.json" >>"$out/demo_mnist.md" 2>/dev/null
    rm -rf "$scratch"
  else
    echo "| MNIST demo | skipped | 0 | no --mnist-data |" >>"$summary"
  fi
fi
cat "$summary"
