#!/usr/bin/env bash
# Compiles the plans the GPU benchmark needs into .plans/ (ignored by git),
# here, where MLIR exists; the device tool carries them with
#   run(command="tests/device/device-check.sh", carry=[".plans"],
#       timeout_s=540)
# Plans (the GPU benchmarks of docs/benchmarks.md):
#   seed_mlp-1M          the forum's model at batch 1,000,000, store-all
#   gpt2-124M-all        GPT-2 124M, batch 8, seq 1024, f32, store-all
#   gpt2-124M-75 / -50   at 75% / 50% of the store-all activation memory
#   gpt2-124M-min        at the minimum feasible budget
#   gpt2-124M-bf16       GPT-2 124M store-all with --precision bf16
#   seed_mlp-maxb32      the forum's model at the largest batch that fits
#   gpt2-124M-maxb32     32 GiB (remat plan --max-batch), GPT-2 likewise
#   resnet50/all, /half  torchvision's resnet50, batch 32, 224 x 224, for
#                        --backend cuda at store-all and half the
#                        activations, without their weights (made there
#                        from the seed; resnet50/model.json)
#   resnet50/bf16        the same at store-all with --precision bf16
# Each plan's memory report sits beside it (NAME.json). Costs are modeled
# with the h200 device profile (DEVICE_PROFILE overrides it).
#
# PLAN_SET=emulator compiles instead the small plans the dry run on the CPU
# emulator uses (`EMULATOR=1 tests/device/device-check.sh`, .ci/run), same
# roles:
#   gpt2-tiny-all / -50  GPT-2 tiny at store-all and half the activations
#   gpt2-tiny-bf16       GPT-2 tiny store-all with --precision bf16
#   seed_mlp-tiny        the forum's model at its tiny preset
#   resnet50/all, /half  a small ResNet of resnet50's blocks (width 2, one
#                        block per stage, batch 2, 32 x 32, 10 classes)
# PLANS_OUT (default .plans) and DEPS_OUT (default .deps; empty: not filled)
# say where they go; REMAT names the compiler (default build/tools/remat/remat).
#
# It also fills .deps/ (ignored by git), a prefix laid out like /usr with
# the header-only packages the GPU machine lacks (nlohmann_json, Catch2 v2),
# copied from this machine's Debian packages; CMake falls back to it
# (REMAT_DEPS_DIR) where find_package finds nothing. Carry both:
#   run(command="tests/device/device-check.sh", carry=[".plans", ".deps"],
#       ...)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
remat="${REMAT:-$root/build/tools/remat/remat}"
out="${PLANS_OUT:-$root/.plans}"
deps="${DEPS_OUT-$root/.deps}"
mkdir -p "$out"

if [[ -n "$deps" ]]; then
  rm -rf "$deps"
  mkdir -p "$deps/include" "$deps/share/cmake" "$deps/lib/cmake"
  cp -r /usr/include/nlohmann /usr/include/catch2 "$deps/include/"
  cp -r /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
  cp -r /usr/lib/cmake/Catch2 "$deps/lib/cmake/"
  cp /usr/lib/libCatch2WithMain.a "$deps/lib/"
fi
# Costs are modeled for the GPU the plans run on (docs/planner.md, "Device
# profiles"); DEVICE_PROFILE=h200-tf32 for runs with REMAT_CUDA_TF32=1.
profile=(--device-profile "${DEVICE_PROFILE:-h200}")
compile() {
  local name="$1"; shift
  "$remat" compile "$@" "${profile[@]}" --emit=plan -o "$out/$name.plan" \
    --report "$out/$name.json"
}
# The budget of a plan at `share` (in %) of the store-all plan's activation
# memory (activations + grads) plus `reserve` bytes of CUDA workspace, from
# the store-all plan's report NAME.json.
budget_at() {
  python3 "$here/budget_at.py" "$1" "$2" "$3"
}
# resnet50 for the CUDA backend (device-check.sh's resnet50 stage): the
# model exported under seed 0 (tools/bench/resnet50_gpu.py export), its plans
# at store-all and at half the activations (+ the workspace reserve; the
# minimum feasible budget where half is below it) in $out/resnet50/ with
# model.json. Only the plans travel: their weights files (102 MB each) are
# deleted, and the GPU machine makes the same weights from the same seed.
# Skipped (a note) without PyTorch and torchvision.
resnet_plans() {
  local reserve="$1" dir="$out/resnet50" work py="${PYTHON:-python3}"
  shift
  "$py" -c "import torch, torchvision" 2> /dev/null || py=/usr/bin/python3
  rm -rf "$dir"
  if ! "$py" -c "import torch, torchvision" 2> /dev/null; then
    echo "device-plans.sh: no resnet50 plans (needs PyTorch and torchvision)" >&2
    return 0
  fi
  work=$(mktemp -d)
  "$py" "$root/tools/bench/resnet50_gpu.py" export "$dir" "$work/model.onnx" \
    "$@" 2> "$work/export.log" || { cat "$work/export.log" >&2; return 1; }
  local model=("$work/model.onnx" --backend cuda)
  compile resnet50/all "${model[@]}"
  local half least
  half=$(budget_at "$dir/all.json" 50 "$reserve")
  least=$({ "$remat" plan "${model[@]}" "${profile[@]}" --budget 1 2>&1 || true; } |
    sed -n 's/.*minimum feasible budget: \([0-9]*\) bytes.*/\1/p')
  (( least + reserve > half )) && half=$((least + reserve))
  compile resnet50/half "${model[@]}" --workspace-reserve "$reserve" \
    --budget "$half"
  compile resnet50/bf16 "${model[@]}" --precision bf16
  rm -rf "$work" "$dir"/*.weights.safetensors
}
if [[ "${PLAN_SET:-gpu}" == emulator ]]; then
  # 40 MiB holds the backend's default workspace for these models (32 MiB
  # of cuBLAS workspace and the kernels' scratch), so nothing shrinks.
  reserve=$((40 << 20))
  tiny=("$root/models/gpt2.json" --preset tiny --set dropout=0)
  compile gpt2-tiny-all "${tiny[@]}"
  # Half the activations is below GPT-2 tiny's minimum: plan at the minimum
  # then (as tests/e2e/cuda_emulator.py does).
  half=$(budget_at "$out/gpt2-tiny-all.json" 50 "$reserve")
  least=$({ "$remat" plan "${tiny[@]}" "${profile[@]}" --budget 1 2>&1 || true; } |
    sed -n 's/.*minimum feasible budget: \([0-9]*\) bytes.*/\1/p')
  (( least + reserve > half )) && half=$((least + reserve))
  compile gpt2-tiny-50 "${tiny[@]}" --workspace-reserve "$reserve" \
    --budget "$half"
  compile gpt2-tiny-bf16 "${tiny[@]}" --precision bf16
  compile seed_mlp-tiny "$root/models/seed_mlp.json" --preset tiny
  # A resnet the emulator can run (its weight-gradient kernel gives each
  # weight a block): width 2, one block per stage, batch 2, 32 x 32.
  resnet_plans "$reserve" --batch 2 --side 32 --classes 10 --width 2 \
    --layers 1,1,1,1
  du -sh "$out"
  exit 0
fi
# Budgets count the CUDA backend's workspace too (docs/cuda.md): the arena
# gets budget - $reserve (cuBLAS's 32 MiB and 32 MiB of kernel scratch,
# which attention uses in chunks of what it holds).
reserve=$((64 << 20))
budgeted() {
  local name="$1" budget="$2"; shift 2
  compile "$name" "$@" --budget "$budget" --workspace-reserve "$reserve"
}
# The largest batch whose arena fits 32 GiB - the reserve, for both models,
# unsplit (--max-microbatches 1: the plans do not use the split search's
# answer, and it takes half of the seed MLP's time).
budget32=$((32 << 30))
maxbatch() {
  "$remat" plan "$@" "${profile[@]}" --max-batch --max-microbatches 1 \
    --budget $((budget32 - reserve)) 2>/dev/null |
    sed -n 's/^largest batch that fits [0-9]* bytes: \([0-9]*\)$/\1/p'
}
gpt2_plans() {
  local gpt2=("$root/models/gpt2.json" --set dropout=0) minimum batch
  compile gpt2-124M-all "${gpt2[@]}"
  compile gpt2-124M-bf16 "${gpt2[@]}" --precision bf16
  budgeted gpt2-124M-75 "$(budget_at "$out/gpt2-124M-all.json" 75 "$reserve")" \
    "${gpt2[@]}"
  budgeted gpt2-124M-50 "$(budget_at "$out/gpt2-124M-all.json" 50 "$reserve")" \
    "${gpt2[@]}"
  # A 1-byte budget fails and names the minimum feasible (arena) budget.
  minimum=$({ "$remat" plan "${gpt2[@]}" "${profile[@]}" --budget 1 2>&1 ||
    true; } | sed -n 's/.*minimum feasible budget: \([0-9]*\) bytes.*/\1/p')
  budgeted gpt2-124M-min $((minimum + reserve)) "${gpt2[@]}"
  batch=$(maxbatch "${gpt2[@]}")
  budgeted gpt2-124M-maxb32 "$budget32" "${gpt2[@]}" --set batch="$batch"
}
seed_mlp_plans() {
  local batch
  compile seed_mlp-1M "$root/models/seed_mlp.json" --set batch=1000000
  batch=$(maxbatch "$root/models/seed_mlp.json")
  budgeted seed_mlp-maxb32 "$budget32" "$root/models/seed_mlp.json" \
    --set batch="$batch"
}
# The three models' plans side by side (each compile runs on one core):
# GPT-2's, the seed MLP's, and resnet50's (torchvision's, batch 32, 3 x
# 224 x 224, 1000 classes). Any that fails fails the script.
pids=()
gpt2_plans & pids+=($!)
seed_mlp_plans & pids+=($!)
resnet_plans "$reserve" --batch 32 --side 224 --classes 1000 & pids+=($!)
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
(( failed == 0 )) || { echo "device-plans.sh: a model's plans failed" >&2; exit 1; }
du -sh "$out" ${deps:+"$deps"}
