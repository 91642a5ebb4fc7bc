#!/usr/bin/env bash
# `relpos bench attention` end to end (DESIGN §7, issue 8) on tiny shapes (a few seconds): --json
# prints one JSON object with an entry per variant and length, positive times, peak memory that
# grows about linearly in N for the linear variants, FastRPB and the fused softmax, and faster for
# softmax_naive; a small --memory-limit-mb marks softmax_naive OOM at the longest length while the
# run goes on and exits 0;
# --help; an unknown variant is a user error (exit 2, one line). Timings are never asserted
# beyond being positive. Usage: test_bench.sh RELPOS_BINARY
set -uo pipefail
relpos=$1
# One thread: the checks are about memory and the JSON, and on a loaded machine OpenMP threads
# waiting for each other can make a 1 ms call take 100 ms.
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python=/usr/bin/python3
source "$(dirname "$0")/checks.sh"

expect_status 0 "bench --help" -- "$relpos" bench --help
grep -q usage "$tmp/out" || fail "relpos bench --help prints no usage"
expect_status 0 "bench attention --help" -- "$relpos" bench attention --help
grep -q "usage: relpos bench attention" "$tmp/out" || fail "bench attention --help prints no usage"

variants=softmax,softmax_naive,linear_elu1,linear_sikf,linear_sikf_fastrpb,linear_sikf_sinspe,linear_elu1_shaw
shape=(--lengths "64,128,256" --batch 1 --heads 2 --dim 8 --min-time 0.01)
expect_status 0 "bench attention --json" -- "$relpos" bench attention --json "${shape[@]}" \
  --filter "$variants"
cp "$tmp/out" "$tmp/run.json"
[[ $(wc -l <"$tmp/run.json") -eq 1 ]] || fail "--json printed $(wc -l <"$tmp/run.json") lines"
# Peak bytes measured at N = 64, 128, 256 (B 1, H 2, D 8, f32, CPU):
#   linear_elu1 29760 / 58432 / 115776, linear_sikf 33280 / 66048 / 131584,
#   linear_sikf_fastrpb 58032 / 114864 / 228528, linear_elu1_shaw 82464 / 162336 / 322080:
#     1.96-1.99 per doubling (every buffer is [B, H, N, *]; FastRPB's FFT buffers are O(N));
#   linear_sikf_sinspe 1457216 / 2661696 / 5070656: 1.83 and 1.91 (its O(N) filter work plus a
#     fixed part);
#   softmax (fused) 29184 / 58368 / 116736: 2.0 per doubling (tiles, then [B, H, N, *] only);
#   softmax_naive 106496 / 409600 / 1605632: 3.85 and 3.92 per doubling, 15.1 from 64 to 256
#     (the [B, H, N, N] scores, their softmax and gradients).
# Linear: < 2.6 per doubling (2 plus room for allocator and parameter changes; quadratic
# growth would be 4); softmax_naive: > 6 over the two doublings (4 would be linear, 16 quadratic).
"$python" - "$tmp/run.json" "$variants" <<'PY' || fail "bench --json output: $(cat "$tmp/run.json")"
import json, sys
out = json.load(open(sys.argv[1]))
variants = sys.argv[2].split(",")
for key, want in (("batch", 1), ("heads", 2), ("dim", 8)):
    assert out[key] == want, (key, out[key])
assert out["device"] == "cpu" and out["threads"] >= 1, out
rows = {(r["variant"], r["length"]): r for r in out["results"]}
assert len(rows) == len(out["results"]) == len(variants) * 3, sorted(rows)
for v in variants:
    for n in (64, 128, 256):
        r = rows[(v, n)]
        assert r["oom"] is False, r
        assert r["forward_ms"] > 0 and r["forward_backward_ms"] > 0 and r["peak_bytes"] > 0, r
peak = {k: r["peak_bytes"] for k, r in rows.items()}
for v in variants:
    if v == "softmax_naive":
        continue
    for a, b in ((64, 128), (128, 256)):
        ratio = peak[(v, b)] / peak[(v, a)]
        assert ratio < 2.6, f"{v}: peak({b}) / peak({a}) = {ratio:.2f}, expected ~linear (< 2.6)"
ratio = peak[("softmax_naive", 256)] / peak[("softmax_naive", 64)]
assert ratio > 6, f"softmax_naive: peak(256) / peak(64) = {ratio:.2f}, expected > 6 (quadratic)"
PY

# The OOM path, with the peaks above (softmax_naive 0.10 / 0.39 / 1.53 MiB, linear_sikf <= 0.13 MiB)
# and a 0.6 MiB limit: over 64,128,256 softmax_naive is stopped at 256 by the prediction from 128
# (0.39 MiB x (256/128)^2 = 1.56 MiB); over 256,512 it is stopped at 256 by the measured peak and
# marked OOM at 512 without running. linear_sikf runs at every length; the exit status is 0.
expect_status 0 "bench attention --memory-limit-mb" -- "$relpos" bench attention --json \
  "${shape[@]}" --filter softmax_naive,linear_sikf --memory-limit-mb 0.6
cp "$tmp/out" "$tmp/limited.json"
grep -q "softmax_naive N 256: OOM" "$tmp/err" || fail "no OOM progress line on stderr: $(cat "$tmp/err")"
expect_status 0 "bench attention --memory-limit-mb, measured" -- "$relpos" bench attention \
  --json --lengths 256,512 --batch 1 --heads 2 --dim 8 --min-time 0.01 \
  --filter softmax_naive,linear_sikf --memory-limit-mb 0.6
cp "$tmp/out" "$tmp/measured.json"
"$python" - "$tmp/limited.json" "$tmp/measured.json" <<'PY' ||
import json, sys
def rows(path, count):
    out = json.load(open(path))
    rows = {(r["variant"], r["length"]): r for r in out["results"]}
    assert len(rows) == len(out["results"]) == count, sorted(rows)
    for r in rows.values():
        if r["oom"]:
            assert r["forward_ms"] is None and r["forward_backward_ms"] is None and r["reason"], r
        else:
            assert r["forward_backward_ms"] > 0 and r["peak_bytes"] > 0, r
    return rows
limited = rows(sys.argv[1], 6)
assert sorted(k for k, r in limited.items() if r["oom"]) == [("softmax_naive", 256)], limited
assert limited[("softmax_naive", 256)]["reason"].startswith("predicted peak"), limited
measured = rows(sys.argv[2], 4)
assert sorted(k for k, r in measured.items() if r["oom"]) == [("softmax_naive", 256), ("softmax_naive", 512)]
assert measured[("softmax_naive", 256)]["reason"].startswith("measured peak"), measured
assert measured[("softmax_naive", 256)]["peak_bytes"] > 0.6 * 2**20, measured
assert measured[("softmax_naive", 512)]["reason"] == "out of memory at N = 256", measured
PY
  fail "memory-limited runs: $(cat "$tmp/limited.json" "$tmp/measured.json")"

# A limit past int64's bytes is no limit there (1e30 MB overflowed the conversion, undefined,
# and read as "none" only by chance).
expect_status 0 "bench attention --memory-limit-mb 1e30" -- "$relpos" bench attention \
  --lengths 64 --batch 1 --heads 2 --dim 8 --min-time 0.01 --filter softmax --memory-limit-mb 1e30
grep -q "memory limit 8796093022208.00 MB" "$tmp/err" ||
  fail "--memory-limit-mb 1e30: stderr '$(cat "$tmp/err")'"

expect_status 2 "unknown variant" -- "$relpos" bench attention --filter softmax,nope --json
[[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "unknown variant: not one line: $(cat "$tmp/err")"
grep -qE "^relpos: \[bench\] unknown variant 'nope'; known: (.*, )?softmax(,|$)" "$tmp/err" ||
  fail "unknown variant: stderr '$(cat "$tmp/err")'"
[[ ! -s $tmp/out ]] || fail "unknown variant: stdout not empty: $(cat "$tmp/out")"
expect_status 2 "bad length" -- "$relpos" bench attention --lengths 64,x
[[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "bad length: not one line: $(cat "$tmp/err")"
expect_status 2 "unknown benchmark" -- "$relpos" bench attn
# An empty item of a list ran every variant (--filter ,), skipped a length (8,,16) or printed an
# empty table (index-first --lengths ,); an infinite --min-time was taken; --list ignored the
# other options; index-first sizes that no layer can take were reported by the layer.
one_line() {  # WHAT PATTERN: exit 2 (checked before) and one stderr line matching PATTERN
  [[ $(wc -l <"$tmp/err") -eq 1 ]] && grep -qE -- "$2" "$tmp/err" ||
    fail "$1: stderr '$(cat "$tmp/err")' is not one line matching /$2/"
}
for args in "--filter ," "--filter softmax," "--lengths 8,,16" "--lengths ,"; do
  expect_status 2 "bench attention $args" -- "$relpos" bench attention $args
  one_line "bench attention $args" "^relpos: \[bench\] --(filter|lengths): an empty item in '"
done
expect_status 2 "index-first --lengths ," -- "$relpos" bench index-first --lengths ,
one_line "index-first --lengths ," "^relpos: \[bench\] --lengths: an empty item in ','$"
for value in inf nan 1e30; do
  expect_status 2 "--min-time $value" -- "$relpos" bench attention --min-time $value
  one_line "--min-time $value" "^relpos: \[bench\] --min-time "
done
expect_status 2 "--list with a bad option" -- "$relpos" bench attention --list --lengths x
one_line "--list with a bad option" "^relpos: \[bench\] a length must be a positive integer"
expect_status 0 "--list --filter" -- "$relpos" bench attention --list --filter softmax,linear_sikf
[[ $(cat "$tmp/out") == $'softmax\nlinear_sikf' || $(cat "$tmp/out") == $'linear_sikf\nsoftmax' ]] ||
  fail "--list --filter softmax,linear_sikf printed '$(cat "$tmp/out")'"
expect_status 2 "index-first --vocab 1" -- "$relpos" bench index-first --vocab 1
one_line "index-first --vocab 1" "^relpos: \[bench\] --vocab must be at least 2"
expect_status 2 "index-first --heads 3 --dim 4" -- "$relpos" bench index-first --heads 3 --dim 4
one_line "index-first --heads 3 --dim 4" "^relpos: \[bench\] --dim 4 is not a multiple of --heads 3$"

if [[ $failures -gt 0 ]]; then
  echo "$failures bench CLI check(s) failed" >&2
  exit 1
fi
echo "bench CLI: all checks passed"
