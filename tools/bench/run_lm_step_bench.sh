#!/usr/bin/env bash
# Language-model training-step benchmark: one full step (forward over a segment after a full
# memory, cross-entropy, backward, clipping, Adam) of the LM demo (configs/demo/lm_moby_dick.yaml)
# and of Transformer-XL enwik8 base (configs/lm/enwik8_txl_base.yaml) at a reduced batch, relpos
# (relpos_bench_train_step) against the same Transformer-XL in PyTorch (bench_lm_step_torch.py),
# one after the other on the same machine; prints a markdown table with medians, tokens per
# second, the ratio relpos / PyTorch and peak memory.
# Usage: tools/bench/run_lm_step_bench.sh [--device cpu|cuda] [--demo-batch B] [--base-batch B]
#          [--threads T] [--min-time S] [--precision f32|bf16] [--models "demo base"]
#          [--set KEY.PATH=VALUE]...
# --precision bf16: relpos with train.precision=bf16, PyTorch under bf16 autocast. --set passes
# a config override to relpos only (e.g. model.attention.fused=false: the composed attention).
# Environment: BUILD_DIR (default build/cpu for the CPU, build/cuda for CUDA; built if absent),
# PYTHON (default /usr/bin/python3, Debian's python3-torch).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
device=cpu demo_batch=16 base_batch=1 threads=$(nproc) min_time=3 precision=f32 models="demo base"
overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --demo-batch) demo_batch=$2; shift 2 ;;
    --base-batch) base_batch=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --set) overrides+=(--set "$2"); shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_lm_step_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
preset=$([[ $device == cuda ]] && echo cuda || echo cpu)
build_dir=${BUILD_DIR:-build/$preset}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [[ ! -x $build_dir/tools/bench/relpos_bench_train_step ]]; then
  { cmake --preset "$preset" && cmake --build "$build_dir" --target relpos_bench_train_step; } \
    >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }
fi
export OMP_NUM_THREADS=$threads
echo "| model | batch x tgt_len (mem_len) | relpos median ms | PyTorch median ms | relpos / PyTorch | relpos tokens/s | relpos peak MB (allocator) | PyTorch peak MB |"
echo "|---|---|---|---|---|---|---|---|"
# name, config, batch, vocab, and the sizes the PyTorch twin builds (they match the config).
for spec in "demo configs/demo/lm_moby_dick.yaml $demo_batch 85 3 128 4 512 64 64" \
            "base configs/lm/enwik8_txl_base.yaml $base_batch 204 12 512 8 2048 512 512"; do
  read -r model config batch vocab layers d heads inner tgt mem <<<"$spec"
  [[ " $models " == *" $model "* ]] || continue
  [[ $model == base ]] && model=enwik8-base
  "$build_dir/tools/bench/relpos_bench_train_step" --config "$config" --batch "$batch" \
    --vocab "$vocab" --device "$device" --min-time "$min_time" \
    --set "train.precision=$precision" ${overrides[@]+"${overrides[@]}"} >"$out/relpos.json"
  steps=$("$python" -c "import json; print(max(5, min(50, int(json.load(open('$out/relpos.json'))['runs']))))")
  "$python" tools/bench/bench_lm_step_torch.py --layers "$layers" --d-model "$d" \
    --heads "$heads" --d-inner "$inner" --vocab "$vocab" --tgt-len "$tgt" --mem-len "$mem" \
    --batch "$batch" --steps "$steps" --warmup 2 --threads "$threads" --device "$device" \
    --precision "$precision" \
    --json >"$out/torch.json"
  "$python" - "$out/relpos.json" "$out/torch.json" "$model" "$batch" "$tgt" "$mem" <<'PY'
import json, sys
r, t = (json.load(open(p)) for p in sys.argv[1:3])
model, batch, tgt, mem = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
assert r["params"] == t["params"], f"parameter counts differ: relpos {r['params']}, torch {t['params']}"
tokens_per_s = batch * tgt / (r["median_ms"] / 1e3)
print(f"| {model} | {batch} x {tgt} ({mem}) | {r['median_ms']:.1f} | {t['median_ms']:.1f} | "
      f"{r['median_ms'] / t['median_ms']:.2f} | {tokens_per_s:,.0f} | "
      f"{r['peak_bytes'] / 1e6:.1f} | {t['peak_bytes'] / 1e6:.1f} ({t['peak_kind']}) |")
PY
done
