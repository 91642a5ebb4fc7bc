#!/usr/bin/env bash
# Runs every libFuzzer target of the `asan` build for a bounded time and fails on any finding.
#   tools/fuzz.sh [SECONDS_PER_TARGET]      (default 30; the asan preset must be built)
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
targets=(idx cifar listops aan imdb char_corpus token_cache config checkpoint)

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
failed=()
printf '[fuzz] %-12s %12s %10s %8s\n' target executions "exec/s" corpus
for t in "${targets[@]}"; do
  findings=$build/findings/$t
  mkdir -p "$work/new/$t" "$findings"
  corpora=("$work/new/$t")
  [[ -d $root/tests/fuzz/corpus/$t ]] && corpora+=("$root/tests/fuzz/corpus/$t")
  [[ -d $work/seeds/$t ]] && corpora+=("$work/seeds/$t")
  log=$build/findings/$t.log
  # -rss_limit_mb: a reader that allocates what a forged header claims is a finding too.
  if ! (cd "$work" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
          -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" "${corpora[@]}") \
      >"$log" 2>&1; then
    failed+=("$t")
  fi
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
