# What the command-line test scripts share; sourced after they set $tmp (a scratch folder).
# fail MESSAGE: counts a failed check and prints it; the script exits 1 at the end when any did.
# expect_status CODE DESCRIPTION -- COMMAND...: runs it with stdout/stderr in $tmp/out, $tmp/err.
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

expect_status() {
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    fail "$what: exit $got, expected $want"; sed 's/^/  | /' "$tmp/err" >&2
  fi
}
