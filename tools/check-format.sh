#!/usr/bin/env bash
# Fails when a C++ source differs from the repo's .clang-format style, listing the files, or
# has a function over 80 lines (tools/check-function-length.py), listing the functions.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' '*.inc')
bad=()
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]})); then
  echo "[check-format] not formatted (run clang-format -i on them):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "[check-format] ${#files[@]} files formatted"
python3 tools/check-function-length.py
