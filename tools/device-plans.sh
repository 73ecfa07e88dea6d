#!/usr/bin/env bash
# Compiles the plans the GPU benchmark needs into .plans/ (ignored by git),
# here, where MLIR exists; the device tool carries them with
#   run(command="tools/device-check.sh", carry=[".plans"], timeout_s=540)
# Plans (the GPU benchmarks of docs/benchmarks.md):
#   seed_mlp-1M          the forum's model at batch 1,000,000, store-all
#   gpt2-124M-all        GPT-2 124M, batch 8, seq 1024, f32, store-all
#   gpt2-124M-75 / -50   at 75% / 50% of the store-all activation memory
#   gpt2-124M-min        at the minimum feasible budget
#   seed_mlp-maxb32      the forum's model at the largest batch that fits
#   gpt2-124M-maxb32     32 GiB (remat plan --max-batch), GPT-2 likewise
# Each plan's memory report sits beside it (NAME.json). Costs are modeled
# with the h200 device profile (DEVICE_PROFILE overrides it).
#
# It also fills .deps/ (ignored by git), a prefix laid out like /usr with
# the header-only packages the GPU machine lacks (nlohmann_json, Catch2 v2),
# copied from this machine's Debian packages; CMake falls back to it
# (REMAT_DEPS_DIR) where find_package finds nothing. Carry both:
#   run(command="tools/device-check.sh", carry=[".plans", ".deps"], ...)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
remat="${REMAT:-$root/build/tools/remat/remat}"
out="$root/.plans"
deps="$root/.deps"
mkdir -p "$out"

rm -rf "$deps"
mkdir -p "$deps/include" "$deps/share/cmake" "$deps/lib/cmake"
cp -r /usr/include/nlohmann /usr/include/catch2 "$deps/include/"
cp -r /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
cp -r /usr/lib/cmake/Catch2 "$deps/lib/cmake/"
cp /usr/lib/libCatch2WithMain.a "$deps/lib/"
# Costs are modeled for the GPU the plans run on (docs/planner.md, "Device
# profiles"); DEVICE_PROFILE=h200-tf32 for runs with REMAT_CUDA_TF32=1.
profile=(--device-profile "${DEVICE_PROFILE:-h200}")
compile() {
  local name="$1"; shift
  "$remat" compile "$@" "${profile[@]}" --emit=plan -o "$out/$name.plan" \
    --report "$out/$name.json"
}
compile seed_mlp-1M "$root/models/seed_mlp.json" --set batch=1000000
compile gpt2-124M-all "$root/models/gpt2.json" --set dropout=0
read -r persistent acts < <(python3 -c "
import json; r = json.load(open('$out/gpt2-124M-all.json')); b = r['breakdown']
a = b['activations'] + b['grads']; print(r['planned_peak_bytes'] - a, a)")
# Budgets count the CUDA backend's workspace too (docs/cuda.md): the arena
# gets budget - $reserve (cuBLAS's 32 MiB and 32 MiB of kernel scratch,
# which attention uses in chunks of what it holds).
reserve=$((64 << 20))
budgeted() {
  local name="$1" budget="$2"; shift 2
  compile "$name" "$@" --budget "$budget" --workspace-reserve "$reserve"
}
budgeted gpt2-124M-75 $((persistent + acts * 3 / 4 + reserve)) \
  "$root/models/gpt2.json" --set dropout=0
budgeted gpt2-124M-50 $((persistent + acts / 2 + reserve)) \
  "$root/models/gpt2.json" --set dropout=0
# A 1-byte budget fails and names the minimum feasible (arena) budget.
minimum=$({ "$remat" plan "$root/models/gpt2.json" --set dropout=0 "${profile[@]}" \
  --budget 1 2>&1 || true; } \
  | sed -n 's/.*minimum feasible budget: \([0-9]*\) bytes.*/\1/p')
budgeted gpt2-124M-min $((minimum + reserve)) "$root/models/gpt2.json" \
  --set dropout=0
# The largest batch whose arena fits 32 GiB - the reserve, for both models.
budget32=$((32 << 30))
maxbatch() {
  "$remat" plan "$@" "${profile[@]}" --max-batch \
    --budget $((budget32 - reserve)) 2>/dev/null |
    sed -n 's/^largest batch that fits [0-9]* bytes: \([0-9]*\)$/\1/p'
}
batch=$(maxbatch "$root/models/seed_mlp.json")
budgeted seed_mlp-maxb32 "$budget32" "$root/models/seed_mlp.json" \
  --set batch="$batch"
batch=$(maxbatch "$root/models/gpt2.json" --set dropout=0)
budgeted gpt2-124M-maxb32 "$budget32" "$root/models/gpt2.json" \
  --set dropout=0 --set batch="$batch"
du -sh "$out" "$deps"
