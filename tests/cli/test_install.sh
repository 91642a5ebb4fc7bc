#!/usr/bin/env bash
# relpos as a library: `cmake --install` of this build into a fresh prefix holds the binary, the
# archives, the headers, configs/, the CMake package and relpos.pc; the installed `relpos` runs;
# examples/engine and examples/custom_attention build against the installed tree with
# find_package(relpos) and run; the engine example builds with pkg-config alone too.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR CXX_COMPILER [CUDA_TOOLKIT_ROOT]
set -uo pipefail
build=$(realpath "$1")
root=$(realpath "$2")
cxx="$3"
cuda_root="${4:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; echo "FAIL: cmake --install" >&2; exit 1; }
for f in bin/relpos lib/librelpos_core.a lib/librelpos_train.a include/relpos/core/tensor.h \
         include/relpos/layers/attention/attention.h lib/cmake/relpos/relposConfig.cmake \
         lib/cmake/relpos/relposConfigVersion.cmake lib/pkgconfig/relpos.pc \
         share/relpos/configs/demo/mnist_sikf_fastrpb2d.yaml share/doc/relpos/README.md \
         share/doc/relpos/examples/engine/main.cpp; do
  [[ -e "$prefix/$f" ]] || fail "the install has no $f"
done
[[ -z "$(find "$prefix/include" -path '*/cuda/*')" ]] || fail "the CUDA kernels' headers were installed"
"$prefix/bin/relpos" --version | grep -q "^relpos " || fail "the installed relpos --version"

# Each example: configured with only the prefix to find relpos, built, run.
cuda_hint=()
[[ -n "$cuda_root" ]] && cuda_hint=(-DCUDAToolkit_ROOT="$cuda_root")
for example in engine custom_attention; do
  out="$tmp/build-$example"
  if ! cmake -S "$root/examples/$example" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" "${cuda_hint[@]}" \
         > "$tmp/$example.log" 2>&1 ||
     ! cmake --build "$out" >> "$tmp/$example.log" 2>&1; then
    tail -30 "$tmp/$example.log" >&2
    fail "examples/$example does not build against the installed relpos"
    continue
  fi
  "$out/$example" > "$tmp/$example.out" 2>&1 || { cat "$tmp/$example.out" >&2; fail "$example exits $?"; }
  echo "$example: $(cat "$tmp/$example.out")"
done
grep -q "attention 'sigmoid'" "$tmp/custom_attention.out" 2>/dev/null ||
  fail "the custom attention example did not run its own variant"

# pkg-config alone.
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  # shellcheck disable=SC2046
  if "$cxx" -O1 "$root/examples/engine/main.cpp" -o "$tmp/engine_pc" \
       $(pkg-config --cflags --libs relpos) > "$tmp/pc.log" 2>&1; then
    "$tmp/engine_pc" | grep -q "^loss " || fail "the pkg-config build of the engine example"
  else
    tail -20 "$tmp/pc.log" >&2
    fail "examples/engine does not build with pkg-config --cflags --libs relpos"
  fi
fi

((failures == 0)) && echo "install: all checks passed"
exit $((failures > 0))
