#!/usr/bin/env bash
# Training-step benchmark: one full step (forward, cross-entropy, backward, AdamW update) of the
# demo model and of the MNIST Table-2 model (linear SIKF + FastRPB 2D) at a reduced batch, relpos
# (relpos_bench_train_step) against the same model in PyTorch (bench_train_step_torch.py), one
# after the other on the same machine; prints a markdown table with medians, the ratio
# relpos / PyTorch and peak memory.
# Usage: tools/bench/run_train_step_bench.sh [--device cpu|cuda] [--demo-batch B] [--mnist-batch B]
#          [--threads T] [--min-time S] [--busy N] [--models "demo mnist"] [--precision f32|bf16]
# --precision bf16: relpos with train.precision=bf16, PyTorch under bf16 autocast.
# --busy N runs N competing busy processes (`yes`) for the whole measurement, both frameworks.
# Environment: BUILD_DIR (default build/cpu for the CPU, build/cuda for CUDA; built if absent),
# PYTHON (default /usr/bin/python3, Debian's python3-torch).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
device=cpu demo_batch=32 mnist_batch=4 threads=$(nproc) min_time=3 busy=0 models="demo mnist"
precision=f32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --demo-batch) demo_batch=$2; shift 2 ;;
    --mnist-batch) mnist_batch=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run_train_step_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
preset=$([[ $device == cuda ]] && echo cuda || echo cpu)
build_dir=${BUILD_DIR:-build/$preset}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
busy_pids=()
trap 'rm -rf "$out"; ((${#busy_pids[@]})) && kill "${busy_pids[@]}" 2>/dev/null; true' EXIT
if [[ ! -x $build_dir/tools/bench/relpos_bench_train_step ]]; then
  { cmake --preset "$preset" && cmake --build "$build_dir" --target relpos_bench_train_step; } \
    >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }
fi
export OMP_NUM_THREADS=$threads
for ((i = 0; i < busy; ++i)); do
  yes >/dev/null &
  busy_pids+=($!)
done
echo "| model | batch | relpos median ms | PyTorch median ms | relpos / PyTorch | relpos peak MB (allocator) | PyTorch peak MB |"
echo "|---|---|---|---|---|---|---|"
declare -A config_of=([demo]=configs/demo/mnist_sikf_fastrpb2d.yaml
                      [mnist]=configs/mnist/linear_sikf_fastrpb2d.yaml)
declare -A batch_of=([demo]=$demo_batch [mnist]=$mnist_batch)
for model in $models; do
  [[ -n ${config_of[$model]:-} ]] || { echo "run_train_step_bench.sh: unknown model '$model' (demo, mnist)" >&2; exit 2; }
  config=${config_of[$model]} batch=${batch_of[$model]}
  "$build_dir/tools/bench/relpos_bench_train_step" --config "$config" --batch "$batch" \
    --device "$device" --min-time "$min_time" --set "train.precision=$precision" >"$out/relpos.json"
  steps=$("$python" -c "import json; print(max(5, min(50, int(json.load(open('$out/relpos.json'))['runs']))))")
  "$python" tools/bench/bench_train_step_torch.py --model "$model" --batch "$batch" \
    --steps "$steps" --warmup 2 --threads "$threads" --device "$device" --precision "$precision" \
    --json >"$out/torch.json"
  "$python" - "$out/relpos.json" "$out/torch.json" "$model" "$batch" <<'PY'
import json, sys
r, t = (json.load(open(p)) for p in sys.argv[1:3])
print(f"| {sys.argv[3]} | {sys.argv[4]} | {r['median_ms']:.1f} | {t['median_ms']:.1f} | "
      f"{r['median_ms'] / t['median_ms']:.2f} | {r['peak_bytes'] / 1e6:.1f} | "
      f"{t['peak_bytes'] / 1e6:.1f} ({t['peak_kind']}) |")
PY
done
