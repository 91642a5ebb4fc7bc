#!/usr/bin/env bash
# Runs every libFuzzer target of the `asan` build for a bounded time and fails on any finding.
#   tools/fuzz.sh [SECONDS_PER_TARGET]      (default 30; the asan preset must be built)
# Targets run side by side, as many at once as the machine has cores (RELPOS_FUZZ_JOBS sets
# another number); each still gets its seconds of wall time.
# Each target starts from the seeds fuzz_seeds writes (valid files of today's formats) and the
# inputs kept in tests/fuzz/corpus/<target>/ (text seeds, and every input that once crashed a
# target: they are replayed first, so a fixed crash stays fixed). New inputs the fuzzer finds go
# to a scratch folder, not into the repository. A finding leaves its input under
# build/asan/findings/<target>/ and the script exits 1 naming it; copy it into
# tests/fuzz/corpus/<target>/ with the fix, and add a test to the reader's suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${1:-30}
build=$root/build/asan
targets=(idx cifar listops aan imdb char_corpus config checkpoint)

for t in "${targets[@]}" seeds; do
  if [[ ! -x $build/tests/fuzz/fuzz_$t ]]; then
    echo "[fuzz] $build/tests/fuzz/fuzz_$t is missing: cmake --preset asan && cmake --build --preset asan" >&2
    exit 2
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/tests/fuzz/fuzz_seeds" "$work/seeds"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0
parallel=${RELPOS_FUZZ_JOBS:-$(nproc)}
if ! [[ $parallel =~ ^[1-9][0-9]*$ ]]; then
  echo "[fuzz] RELPOS_FUZZ_JOBS must be a positive integer, not '$parallel'" >&2
  exit 2
fi

# Fuzzes target $1 for the set time; its exit status goes to work/status/$1.
fuzz_target() {
  local t=$1
  local findings=$build/findings/$t
  mkdir -p "$work/new/$t" "$findings"
  local corpora=("$work/new/$t")
  [[ -d $root/tests/fuzz/corpus/$t ]] && corpora+=("$root/tests/fuzz/corpus/$t")
  [[ -d $work/seeds/$t ]] && corpora+=("$work/seeds/$t")
  # -rss_limit_mb: a reader that allocates what a forged header claims is a finding too.
  local status=0
  (cd "$work" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" "${corpora[@]}") \
    >"$build/findings/$t.log" 2>&1 || status=$?
  echo "$status" >"$work/status/$t"
}

mkdir -p "$work/status"
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  fuzz_target "$t" &
done
wait

failed=()
printf '[fuzz] %-12s %12s %10s %8s\n' target executions "exec/s" corpus
for t in "${targets[@]}"; do
  log=$build/findings/$t.log
  [[ $(cat "$work/status/$t" 2>/dev/null) == 0 ]] || failed+=("$t")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  size=$(find "$work/new/$t" -type f | wc -l)
  printf '[fuzz] %-12s %12s %10s %8s\n' "$t" "${runs:-?}" "${rate:-?}" "$size"
done

if ((${#failed[@]})); then
  for t in "${failed[@]}"; do
    echo "[fuzz] FINDING in fuzz_$t (log build/asan/findings/$t.log):" >&2
    grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==' "$build/findings/$t.log" | head -8 >&2
  done
  exit 1
fi
echo "[fuzz] ${#targets[@]} targets, ${seconds}s each: no findings"
