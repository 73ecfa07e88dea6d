#!/usr/bin/env bash
# Sets up (installs missing packages, builds) and runs the whole test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${REMAT_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh" "$build"
cd "$build"
ctest --output-on-failure -j"$(nproc)"
