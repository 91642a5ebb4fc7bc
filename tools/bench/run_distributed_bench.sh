#!/usr/bin/env bash
# Data-parallel scaling on one machine: `relpos train` for a number of updates as one process and
# as `mpirun -np 2`, one thread per process, same config and global batch (README "Training on
# several processes"). Reports the median seconds per update (metrics.jsonl step_s, the first
# updates dropped as warm-up), the scaling efficiency (ideal: half the 1-process time; efficiency
# = ideal / measured), and rank 0's all-reduce seconds per update left after backward ended
# (comm_s: what did not overlap). Beside it, PyTorch DistributedDataParallel on the same models,
# shapes and process counts (bench_ddp_torch.py, gloo, 4 MB buckets), when the system Python has
# torch. The runs alternate relpos 1, 2, PyTorch 1, 2, ... so drifting load hits all alike;
# medians over every kept update of every repeat.
# Usage: tools/bench/run_distributed_bench.sh [--repeats R] [--only NAME] [--json FILE]
# Environment: BUILD_DIR (default build/default), RELPOS_MPIRUN_ARGS (extra mpirun arguments).
# Needs data/mnist (relpos data prepare mnist) and data/moby-dick (relpos data prepare moby-dick).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
repeats=3 only="" json=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run_distributed_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
relpos=${BUILD_DIR:-build/default}/tools/relpos
[[ -x $relpos ]] || { echo "run_distributed_bench.sh: build relpos first ($relpos)" >&2; exit 2; }
if "$relpos" --version | grep -q "built without MPI"; then
  echo "run_distributed_bench.sh: relpos was built without MPI (install libopenmpi-dev)" >&2
  exit 2
fi
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun=(mpirun --oversubscribe --bind-to none ${RELPOS_MPIRUN_ARGS:-})
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)

has_torch=$("$python" -c "import torch.distributed as d; print(int(d.is_gloo_available()))" \
  2>/dev/null || echo 0)
# NAME CONFIG UPDATES WARMUP TORCH_MODEL BATCH [--set ...]: the demo classifier and LM as
# configured, and the Table-2 MNIST model (8 layers, d 256, 786 positions) at a global batch of 16.
cases=(
  "demo_classifier configs/demo/mnist_sikf_fastrpb2d.yaml 40 5 demo 32"
  "demo_lm configs/demo/lm_moby_dick.yaml 40 5 lm 16"
  "table2_batch16 configs/mnist/linear_sikf_fastrpb2d.yaml 8 2 mnist 16 --set data.batch_size=16"
)
for spec in "${cases[@]}"; do
  read -r name config updates warmup torch_model batch extra <<<"$spec"
  [[ -z $only || $only == "$name" ]] || continue
  for ((r = 0; r < repeats; ++r)); do
    for np in 1 2; do
      launcher=()
      [[ $np -eq 2 ]] && launcher=("${mpirun[@]}" -np 2)
      run_dir=$out/$name.$np.$r
      # No validation before the stop: eval_every past it; the schedule is the config's own.
      # shellcheck disable=SC2086
      "${launcher[@]}" "$relpos" train "$config" --out "$run_dir" --quiet \
        --set train.log_every=1 --set train.eval_every=1000000 --stop-at-step "$updates" \
        $extra >"$run_dir.log" 2>&1 || { cat "$run_dir.log" >&2; exit 1; }
      echo "$name np=$np repeat $((r + 1))/$repeats done" >&2
    done
    [[ $has_torch -eq 1 ]] || continue
    for np in 1 2; do
      "$python" tools/bench/bench_ddp_torch.py --model "$torch_model" --batch "$batch" \
        --procs "$np" --steps "$((updates - warmup))" --warmup "$warmup" \
        >"$out/$name.torch.$np.$r.json"
    done
  done
  echo "$name $warmup" >>"$out/cases"
done

"$python" - "$out" "$json" <<'PY'
import json, statistics, sys
from pathlib import Path
out, json_path = Path(sys.argv[1]), sys.argv[2]
rows = []
for line in (out / "cases").read_text().splitlines():
    name, warmup = line.split()
    stats = {}
    for np in (1, 2):
        step, comm = [], []
        for run in sorted(out.glob(f"{name}.{np}.*")):
            if not run.is_dir():
                continue
            records = [json.loads(l) for l in (run / "metrics.jsonl").open()]
            records = [r for r in records if r.get("event") == "train"][int(warmup):]
            step += [r["step_s"] for r in records]
            comm += [r.get("comm_s", 0.0) for r in records]
        stats[np] = (statistics.median(step), statistics.median(comm), len(step))
    (t1, _, n1), (t2, c2, n2) = stats[1], stats[2]
    row = {"case": name, "one_process_s": t1, "two_ranks_s": t2,
           "ideal_s": t1 / 2, "vs_ideal": t2 / (t1 / 2), "efficiency": (t1 / 2) / t2,
           "exposed_allreduce_s": c2, "updates_measured": [n1, n2]}
    torch_runs = {np: [json.loads(p.read_text())["median_s"]
                       for p in sorted(out.glob(f"{name}.torch.{np}.*.json"))] for np in (1, 2)}
    if torch_runs[1] and torch_runs[2]:
        p1, p2 = statistics.median(torch_runs[1]), statistics.median(torch_runs[2])
        row.update(torch_one_process_s=p1, torch_two_ranks_s=p2, torch_vs_ideal=p2 / (p1 / 2))
    rows.append(row)
def fmt(r, key, spec):
    return format(r[key], spec) if key in r else "-"
print("| case | 1 process s/update | 2 ranks s/update | 2 ranks / ideal | exposed all-reduce "
      "s/update | PyTorch DDP 1 process | PyTorch DDP 2 ranks | PyTorch 2 ranks / ideal |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['case']} | {r['one_process_s']:.4f} | {r['two_ranks_s']:.4f} | "
          f"{r['vs_ideal']:.2f} | {r['exposed_allreduce_s']:.4f} | "
          f"{fmt(r, 'torch_one_process_s', '.4f')} | {fmt(r, 'torch_two_ranks_s', '.4f')} | "
          f"{fmt(r, 'torch_vs_ideal', '.2f')} |")
if json_path:
    Path(json_path).write_text(json.dumps(rows, indent=1) + "\n")
PY
