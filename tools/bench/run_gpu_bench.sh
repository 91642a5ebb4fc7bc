#!/usr/bin/env bash
# GPU op benchmark: relpos_bench_ops --device cuda against bench_ops_torch.py --device cuda on the
# same cases, op by op, then a markdown table with median times, the ratio relpos/PyTorch, the
# bandwidth each achieves (bytes read + written / median) as a share of a device-to-device copy
# measured in the same run, and peak device memory of one call.
# Usage: tools/bench/run_gpu_bench.sh [--json-out DIR] [--min-time S]
# Environment: BUILD_DIR (a build with RELPOS_CUDA=ON; default build/cuda), PYTHON (a python
# whose torch has CUDA; default python3).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
json_out="" min_time=0.5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --json-out) json_out=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    *) echo "run_gpu_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build_dir=${BUILD_DIR:-build/cuda}
python=${PYTHON:-python3}
bench="$build_dir/tools/bench/relpos_bench_ops"
[[ -x $bench ]] || { echo "run_gpu_bench.sh: $bench not built (cmake --preset cuda)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

ops="copy,matmul,bmm,softmax,layer_norm,rfft,cumsum,add,sum"
for op in ${ops//,/ }; do  # alternate relpos and torch per op
  "$bench" --device cuda --json --filter "$op" --min-time "$min_time" >>"$out/relpos.jsonl"
  "$python" tools/bench/bench_ops_torch.py --device cuda --json --filter "$op" \
    --min-time "$min_time" >>"$out/torch.jsonl"
done
# relpos's softmax again through cuDNN (the design keeps cuDNN where it beats our kernel).
RELPOS_CUDNN_SOFTMAX=1 "$bench" --device cuda --json --filter softmax --min-time "$min_time" |
  sed 's/"op": "softmax"/"op": "softmax (cuDNN)"/' >>"$out/relpos.jsonl"
[[ -n $json_out ]] && mkdir -p "$json_out" && cp "$out"/*.jsonl "$json_out"/

"$python" - "$out/relpos.jsonl" "$out/torch.jsonl" <<'PY'
import json, sys
rel = [json.loads(l) for l in open(sys.argv[1])]
tor = {(r["op"], r["shape"]): r for r in map(json.loads, open(sys.argv[2]))}
# The copy baseline: the faster of the two clones of the same 64 MiB tensor (read + write).
copy = next(r for r in rel if r["op"] == "copy")
best_ms = min(copy["median_ms"], tor.get((copy["op"], copy["shape"]), copy)["median_ms"])
copy_gbs = copy["io_bytes"] / best_ms / 1e6
import torch
print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; "
      f"device-to-device copy (faster clone): {copy_gbs:.0f} GB/s; TF32 off on both sides")
print()
print("| op | shape | relpos ms | torch ms | relpos/torch | relpos GB/s | % of copy | relpos peak MB | torch peak MB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rel:
    t = tor.get((r["op"].replace(" (cuDNN)", ""), r["shape"]))
    gbs = r["io_bytes"] / r["median_ms"] / 1e6
    tms = f'{t["median_ms"]:.3f}' if t else "-"
    ratio = f'{r["median_ms"] / t["median_ms"]:.2f}' if t else "-"
    tpeak = f'{t["peak_bytes"] / 2**20:.1f}' if t and t.get("peak_bytes") is not None else "-"
    print(f'| {r["op"]} | {r["shape"]} | {r["median_ms"]:.3f} | {tms} | {ratio} | {gbs:.0f} | '
          f'{100 * gbs / copy_gbs:.0f}% | {r["peak_bytes"] / 2**20:.1f} | {tpeak} |')
PY
