#!/usr/bin/env bash
# Attention benchmark: relpos_bench_attention against bench_attention_torch.py on the same
# variants and lengths, variant by variant alternately (so load drifts hit both alike), then a
# markdown table: forward+backward median ms, the ratio relpos / PyTorch, and peak memory.
# Usage: tools/bench/run_attention_bench.sh [--device cpu|cuda] [--filter NAME[,...]]
#          [--lengths 1024,...] [--min-time S] [--max-quadratic-n N] [--json-out DIR]
#          [--precision f32|bf16]  (bf16: relpos under bf16 autocast, PyTorch under torch.autocast)
# Environment: BUILD_DIR (default build/cpu for the CPU, build/cuda for CUDA; built if absent),
# PYTHON (default /usr/bin/python3, Debian's python3-torch; on a GPU machine a CUDA PyTorch).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
device=cpu filter="" lengths="1024,2048,4096,8192,16384" min_time=0.5 max_quadratic_n=8192
precision=f32
json_out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --lengths) lengths=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --max-quadratic-n) max_quadratic_n=$2; shift 2 ;;
    --json-out) json_out=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "run_attention_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
preset=$([[ $device == cuda ]] && echo cuda || echo cpu)
build_dir=${BUILD_DIR:-build/$preset}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [[ ! -x $build_dir/tools/bench/relpos_bench_attention ]]; then
  { cmake --preset "$preset" && cmake --build "$build_dir" --target relpos_bench_attention; } \
    >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }
fi
bench="$build_dir/tools/bench/relpos_bench_attention"
[[ -n $filter ]] || filter=$("$bench" --list)
# The same thread count on both sides: OMP_NUM_THREADS for relpos (and OpenBLAS), --threads for
# torch (whose default may differ).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(env -u OMP_NUM_THREADS nproc)}
common=(--device "$device" --lengths "$lengths" --min-time "$min_time"
        --max-quadratic-n "$max_quadratic_n" --precision "$precision" --json)
echo "device: $device; precision $precision; OMP_NUM_THREADS $OMP_NUM_THREADS; $(date -u +%F)"
for variant in ${filter//,/ }; do
  "$bench" "${common[@]}" --filter "$variant" >>"$out/relpos.jsonl"
  if "$python" tools/bench/bench_attention_torch.py --list | grep -qx "$variant"; then
    "$python" tools/bench/bench_attention_torch.py "${common[@]}" --filter "$variant" \
      --threads "$OMP_NUM_THREADS" >>"$out/torch.jsonl"
  fi
done
touch "$out/torch.jsonl"
[[ -z $json_out ]] || { mkdir -p "$json_out" && cp "$out"/*.jsonl "$json_out"/; }

"$python" - "$out/relpos.jsonl" "$out/torch.jsonl" <<'PY'
import json, sys
rel = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
peer = {(r["variant"], r["n"]): r for r in (json.loads(l) for l in open(sys.argv[2]) if l.strip())}
print("| variant | N | relpos median ms | torch median ms | relpos / torch | relpos peak MB "
      "| torch peak MB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for r in rel:
    t = peer.get((r["variant"], r["n"]))
    tm = f"{t['median_ms']:.2f}" if t else "—"
    ratio = f"{r['median_ms'] / t['median_ms']:.2f}" if t else "—"
    tp = f"{t['peak_bytes'] / 2**20:.1f}" if t else "—"
    print(f"| {r['variant']} | {r['n']} | {r['median_ms']:.2f} | {tm} | {ratio} "
          f"| {r['peak_bytes'] / 2**20:.1f} | {tp} |")
PY
