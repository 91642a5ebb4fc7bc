#!/usr/bin/env bash
# Builds relpos_bench_ops (cpu preset) and runs it and bench_ops_torch.py on the same cases with
# the same thread count, op by op alternately (so background load drifts hit both alike), then
# prints a markdown table. With --rounds N everything runs N times and the table keeps, per case
# and side, the round with the lowest median (the least disturbed one on a shared machine).
# Usage: tools/bench/run_cpu_bench.sh [--json-out DIR] [--filter OP[,OP...]] [--min-time S]
#                                     [--rounds N] [--threads N (default: nproc)]
#                                     [--build-dir DIR (default: the cpu preset, build/cpu)]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# GNU nproc answers OMP_NUM_THREADS when it is set: ask for the usable cores without it.
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
json_out="" filter="matmul,bmm,softmax,layer_norm,rfft,cumsum,copy,add,sum,gelu,cast"
min_time=0.5 rounds=1 threads=$cores build_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --json-out) json_out=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "run_cpu_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cd "$root"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
build() {  # quiet unless it fails
  "$@" >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }
}
if [[ -z "$build_dir" ]]; then
  build_dir=build/cpu
  [[ -f "$build_dir/build.ninja" ]] || build cmake --preset cpu
  build cmake --build --preset cpu --target relpos_bench_ops
else
  [[ -f "$build_dir/build.ninja" ]] ||
    build cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELPOS_CUDA=OFF
  build cmake --build "$build_dir" --target relpos_bench_ops
fi
bench="$build_dir/tools/bench/relpos_bench_ops"
python=/usr/bin/python3  # Debian's python3-torch lives in the system interpreter

export OMP_NUM_THREADS=$threads
echo "nproc: $cores; OMP_NUM_THREADS: $OMP_NUM_THREADS; torch.set_num_threads($threads);" \
  "OPENBLAS_NUM_THREADS: ${OPENBLAS_NUM_THREADS-unset}; OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE-unset}"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(date -u +%F)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

for ((round = 0; round < rounds; ++round)); do
  for op in ${filter//,/ }; do
    "$bench" --json --filter "$op" --min-time "$min_time" >>"$out/relpos.jsonl"
    "$python" tools/bench/bench_ops_torch.py --json --filter "$op" --threads "$threads" \
      --min-time "$min_time" >>"$out/torch.jsonl"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n "$json_out" ]]; then
  mkdir -p "$json_out"
  cp "$out/relpos.jsonl" "$out/torch.jsonl" "$json_out/"
fi

echo "rounds: $rounds (table: per case and side, the round with the lowest median)"
"$python" - "$out/relpos.jsonl" "$out/torch.jsonl" <<'EOF'
import json, sys
def load(path):  # the lowest-median round of each case, in first-seen order
    best = {}
    for row in (json.loads(line) for line in open(path) if line.strip()):
        key = (row["op"], row["shape"])
        if key not in best or row["median_ms"] < best[key]["median_ms"]:
            best[key] = row
    return best
relpos, peer = load(sys.argv[1]), load(sys.argv[2])
relpos, torch = list(relpos.values()), list(peer.values())
r0, t0 = relpos[0], torch[0]
print(f"\nthreads: relpos {r0['threads']} OpenMP / {r0['blas_threads']} OpenBLAS; "
      f"torch {t0['threads']} intra-op / {t0['blas_threads']} OpenBLAS\n")
print("| op | shape | relpos median ms | torch median ms | relpos / torch | relpos min ms "
      "| torch min ms | relpos peak MB | torch peak MB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
mb = lambda b: "n/a" if b is None else f"{b / 2**20:.2f}"
for r in relpos:
    t = peer.get((r["op"], r["shape"]))
    ms = lambda row, key: f"{row[key]:.3f}" if row else "n/a"
    ratio = f"{r['median_ms'] / t['median_ms']:.2f}" if t else "n/a"
    print(f"| {r['op']} | {r['shape']} | {ms(r, 'median_ms')} | {ms(t, 'median_ms')} | {ratio} "
          f"| {ms(r, 'min_ms')} | {ms(t, 'min_ms')} | {mb(r['peak_bytes'])} "
          f"| {mb(t['peak_bytes'] if t else None)} |")
EOF
