#!/usr/bin/env bash
# Sets up (installs missing packages, builds) and runs the whole test suite:
# the main build's tests, then the CUDA backend's [cuda] tests on the CPU
# emulator (a second, runtime-only build: REMAT_CUDA_EMULATOR=ON, see
# docs/cuda.md), so the GPU kernels are checked where no GPU exists.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${REMAT_BUILD_DIR:-$root/build}"
emu="${REMAT_EMU_BUILD_DIR:-$build-cuda-emu}"
"$root/tools/setup.sh" "$build"
echo "test: set up and built at ${SECONDS} s"
# The tests' temporary files go to a folder of their own, which must be
# empty when they pass: a test removes what it wrote unless it failed
# (tests/e2e/workdir.py, tests/unit/runtime/Main.cpp). A short path, as
# OpenMPI keeps sockets there.
tests_tmp=$(mktemp -d "${TMPDIR:-/tmp}/remat-tests.XXXXXX")
export TMPDIR="$tests_tmp"
# ctest runs a test a core side by side, and each test's OpenMP threads
# (remat's kernels, OpenBLAS, oneDNN, PyTorch's) would otherwise spin at
# their barriers on cores the other tests need: threads that wait sleep.
export OMP_WAIT_POLICY=passive
cd "$build"
ctest --output-on-failure -j"$(nproc)"
echo "test: ctest passed at ${SECONDS} s"
# The GPU benchmark's plans (tests/device/device-plans.sh), for the
# emulator's memory accounting test (ctest unit-cuda-device-plans below).
PLANS_OUT="$build/device-plans" DEPS_OUT="" REMAT="$build/tools/remat/remat" \
  "$root/tests/device/device-plans.sh" > /dev/null

echo "test: the CUDA backend on the CPU emulator ($emu) from ${SECONDS} s"
if [[ ! -f "$emu/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$emu" -DCMAKE_BUILD_TYPE=Release \
    -DREMAT_ENABLE_MLIR=OFF -DREMAT_CUDA_EMULATOR=ON >/dev/null
fi
ninja -C "$emu" -j"$(nproc)" remat-unit-cuda remat-run
cd "$emu"
REMAT_DEVICE_PLANS="$build/device-plans" REMAT_COMPILER="$build/tools/remat/remat" \
  ctest --output-on-failure -j"$(nproc)" -R '^unit-cuda'
# Every model's plans through `remat run --backend cuda` on the emulator,
# against the CPU backend (the compiler comes from the main build).
python3 "$root/tests/e2e/cuda_emulator.py" --remat "$build/tools/remat/remat" \
  --run "$emu/runtime/remat-run" --work "$emu/e2e"
if [[ -n "$(ls -A "$tests_tmp")" ]]; then
  echo "test: the tests passed but left files in $tests_tmp:" >&2
  ls -A "$tests_tmp" >&2
  exit 1
fi
rmdir "$tests_tmp"
