#!/usr/bin/env bash
# Builds the CPU-only relpos (the `cpu` preset) and packs it into a Debian package with CPack:
#   tools/make-deb.sh            -> build/cpu/relpos_<version>_<arch>.deb
# Its dependencies come from dpkg-shlibdeps (the shared libraries the binary links) and the
# development packages the installed headers and archives need (cmake/install.cmake). A CUDA
# build is not packed: the CUDA toolkit is not a Debian package.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset cpu -DRELPOS_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr > /dev/null
cmake --build --preset cpu
(cd build/cpu && cpack -G DEB)
ls build/cpu/relpos_*.deb
