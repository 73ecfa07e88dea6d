#!/usr/bin/env bash
# The sanitizer job (.ci/run): an MLIR-free build with AddressSanitizer and
# UndefinedBehaviorSanitizer (runtime, planner, plan files, the model
# readers), its unit tests, then the fuzzers on plan files (remat-run),
# model JSON and ONNX files (remat-read-model): zero reports allowed.
#   tests/sanitize.sh                 build in build-asan/, 300 mutants each
#   FUZZ_COUNT=N tests/sanitize.sh    N mutants each
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${REMAT_ASAN_BUILD_DIR:-$root/build-asan}"
count="${FUZZ_COUNT:-300}"
# Debian's python3 has PyTorch and onnx (python3-torch, python3-onnx).
py=/usr/bin/python3
[[ -x "$py" ]] || py=python3
# (GCC 12 warns of maybe-uninitialized members inside libstdc++'s
# std::function under -fsanitize at -O1: false positives in system headers.)
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -Wno-maybe-uninitialized"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DREMAT_ENABLE_MLIR=OFF -DREMAT_MODEL_READER=ON -DREMAT_ENABLE_CUDA=OFF \
    >/dev/null
fi
echo "sanitize: building ($build)"
ninja -C "$build" -j"$(nproc)" remat-run remat-read-model remat-unit-runtime \
  remat-unit-planner remat-unit-memory remat-unit-explain

# Any report stops the program with an exit code of its own (86-88), which
# ctest and the fuzzers count as a failure.
export ASAN_OPTIONS="exitcode=86:detect_leaks=1:handle_abort=1"
export UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1"
export LSAN_OPTIONS="exitcode=88"
# Tests and fuzzing jobs run a core each, side by side: OpenMP threads that
# wait sleep rather than spin on the other jobs' cores (as in tools/test.sh).
export OMP_WAIT_POLICY=passive
echo "sanitize: unit tests"
# (The planner's comparisons of the exact MILP and the exhaustive search
# with brute force on hundreds of small DAGs run in the main build's ctest
# only: here they took 3 of the 6.5 minutes of CPU; the MILP still runs
# under the sanitizers in the chain DP and infeasibility tests.)
(cd "$build" && ctest --output-on-failure -j"$(nproc)" \
  -R '^(unit-(runtime|memory|explain)$|planner:)' \
  -E 'equals (brute force|exhaustive search)')

out="$build/fuzz"
rm -rf "$out"
mkdir -p "$out"
echo "sanitize: fuzzing plan files ($count mutants)"
"$py" "$root/tests/fuzz/fuzz_inputs.py" --target run --quiet --seed 1 \
  --binary "$build/runtime/remat-run" --seeds "$root"/tests/e2e/plans/*.plan \
  --iterations "$count" --jobs "$(nproc)" --out "$out/plans"
echo "sanitize: fuzzing model JSON ($count mutants)"
"$py" "$root/tests/fuzz/fuzz_inputs.py" --target read-model --quiet \
  --seed 1 --binary "$build/tests/fuzz/remat-read-model" \
  --seeds "$root"/models/*.json "$root"/tests/e2e/models/*.json \
  --iterations "$count" --jobs "$(nproc)" --out "$out/models"
echo "sanitize: fuzzing ONNX files ($count mutants)"
rc=0
"$py" "$root/tests/fuzz/fuzz_onnx.py" --reader --seed 1 --count "$count" \
  --binary "$build/tests/fuzz/remat-read-model" --jobs "$(nproc)" \
  --asan-memory-mb 4096 --rlimit-as-mb 0 --out "$out/onnx" || rc=$?
if [[ $rc -eq 77 ]]; then
  echo "sanitize: ONNX fuzzing skipped (no PyTorch or no ONNX support)"
elif [[ $rc -ne 0 ]]; then
  exit "$rc"
fi
echo "sanitize: 0 sanitizer reports"
