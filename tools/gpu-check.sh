#!/usr/bin/env bash
# One command for a machine with a GPU (and possibly no network): finds the CUDA toolkit and
# cuDNN there, builds the `cuda` preset, runs the test suite (CPU and CUDA cases), runs the test
# binaries again under compute-sanitizer memcheck, runs the GPU op benchmark against PyTorch,
# and prints a summary table last. Full logs go to OUT_DIR.
#   tools/gpu-check.sh OUT_DIR [--skip-bench] [--skip-sanitizer]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then sed -n '2,6p' "$0"; exit 0; fi
done
out=${1:?usage: tools/gpu-check.sh OUT_DIR [--skip-bench] [--skip-sanitizer]}
if [[ $out == -* ]]; then
  echo "gpu-check.sh: the first argument is OUT_DIR, got '$out' (see --help)" >&2
  exit 2
fi
shift
skip_bench=0 skip_sanitizer=0
for arg in "$@"; do
  case $arg in
    --skip-bench) skip_bench=1 ;;
    --skip-sanitizer) skip_sanitizer=1 ;;
    *) echo "unknown option $arg" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=build/gpu-check
summary=()
note() { summary+=("$1"); echo "[gpu-check] $1"; }

# ---- locate the toolkit, cuDNN and a PyTorch with CUDA
nvcc=$(command -v nvcc || true)
[[ -z $nvcc ]] && for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc /opt/cuda/bin/nvcc; do
  [[ -x $c ]] && nvcc=$c && break
done
[[ -z $nvcc ]] && { note "FAIL: nvcc not found"; exit 1; }
cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
cudnn_header=$(find "$cuda_root" /usr/include /usr/local/include -name cudnn.h 2>/dev/null | head -n 1)
cudnn_lib=$(find "$cuda_root" /usr/lib /usr/lib64 /usr/local/lib -name 'libcudnn.so*' 2>/dev/null | head -n 1)
cudnn_root=""
if [[ -n $cudnn_header && -n $cudnn_lib ]]; then
  cudnn_root=$(dirname "$(dirname "$cudnn_header")")
fi
sanitizer=$(command -v compute-sanitizer || ls "$cuda_root"/bin/compute-sanitizer 2>/dev/null || true)
python=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    python=$(command -v "$p"); break
  fi
done
{
  echo "nvcc: $nvcc"; "$nvcc" --version | tail -n 2
  echo "cuDNN header: ${cudnn_header:-none}  library: ${cudnn_lib:-none}"
  echo "compute-sanitizer: ${sanitizer:-none}"; echo "python with torch.cuda: ${python:-none}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
} | tee "$out/environment.txt"

# ---- build
cmake_args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELPOS_CUDA=ON
            -DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_root")
[[ -n $cudnn_root ]] && cmake_args+=(-DCUDNN_ROOT="$cudnn_root"
                                     -DCUDNN_INCLUDE_DIR="$(dirname "$cudnn_header")"
                                     -DCUDNN_LIBRARY="$cudnn_lib")
start=$SECONDS
if cmake "${cmake_args[@]}" >"$out/configure.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" -- -k 0 >"$out/build.log" 2>&1; then
  note "build: ok ($((SECONDS - start)) s)"
else
  note "build: FAILED (see build.log / configure.log)"
  tail -n 30 "$out/build.log" "$out/configure.log" 2>/dev/null
  printf '\n== summary ==\n'; printf '%s\n' "${summary[@]}"; exit 1
fi

# ---- tests: every suite, CPU and CUDA cases
tests_rc=0
for t in "$build"/tests/relpos_*_tests; do
  name=$(basename "$t")
  "$t" --no-colors=true >"$out/$name.log" 2>&1 || tests_rc=1
  line=$(grep -E '^\[doctest\] test cases' "$out/$name.log" | tail -n 1)
  skipped=$(grep -c 'SKIPPED (no CUDA device)' "$out/$name.log")
  note "$name: ${line#\[doctest\] } (CUDA skips: $skipped)"
done

# ---- data-parallel training on the GPU: 2 ranks sharing it over NCCL against one process
if command -v mpirun >/dev/null; then
  if RELPOS_TEST_DEVICE=cuda tests/cli/test_distributed.sh "$build/tools/relpos" \
       >"$out/distributed.log" 2>&1; then
    note "distributed (mpirun -np 2, NCCL): ok"
  else
    tests_rc=1
    note "distributed (mpirun -np 2, NCCL): FAILED (see distributed.log)"
  fi
else
  note "distributed: SKIPPED (no mpirun: apt-get install openmpi-bin libopenmpi-dev)"
fi

# ---- compute-sanitizer memcheck over the same binaries
if ((skip_sanitizer == 0)) && [[ -n $sanitizer ]]; then
  for t in "$build"/tests/relpos_*_tests; do
    name=$(basename "$t")
    "$sanitizer" --tool memcheck --leak-check full --error-exitcode 99 "$t" --no-colors=true \
      >"$out/$name.memcheck.log" 2>&1
    rc=$?
    errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$out/$name.memcheck.log" | tail -n 1)
    # Leaks count as errors too; those at exit are cuDNN's own handle allocations (the per-device
    # context lives for the whole process), so report them apart from access errors.
    leaks=$(grep -Eo 'LEAK SUMMARY: [0-9]+ bytes leaked in [0-9]+' "$out/$name.memcheck.log" |
              grep -Eo '[0-9]+$' || echo 0)
    leaked_by=$(grep -A3 'Leaked' "$out/$name.memcheck.log" | grep -Eo 'in lib[a-z_]+' | sort -u |
                  tr '\n' ' ')
    access=$(( ${errors##* } - leaks ))
    note "memcheck $name: ${errors:-no summary} = $access access errors + $leaks leaks${leaked_by:+ (${leaked_by% })} (exit $rc)"
  done
fi

# ---- GPU op benchmark against PyTorch
if ((skip_bench == 0)); then
  if [[ -x tools/bench/run_gpu_bench.sh ]]; then
    if BUILD_DIR=$build PYTHON=${python:-python3} tools/bench/run_gpu_bench.sh \
         --json-out "$out" >"$out/bench.md" 2>"$out/bench.log"; then
      note "benchmark: ok (table in bench.md)"
    else
      note "benchmark: FAILED (see bench.log)"
    fi
  else
    note "benchmark: tools/bench/run_gpu_bench.sh missing"
  fi
fi

printf '\n== summary ==\n'
printf '%s\n' "${summary[@]}"
[[ -f $out/bench.md ]] && cat "$out/bench.md"
exit $tests_rc
