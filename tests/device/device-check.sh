#!/usr/bin/env bash
# device-check.sh: the one prepared check for a GPU machine (CUDA, CMake,
# Ninja, PyTorch with CUDA; no MLIR, no network). A GPU machine comes with
# about 15 minutes, its start included: this run stays under TOTAL_S = 300 s
# (5 minutes), so a second try fits.
#
#   tests/device/device-plans.sh     # here, first: fills .plans and .deps
#   run(command="tests/device/device-check.sh", carry=[".plans", ".deps"],
#       timeout_s=360)
#
# Stages, cheapest and most informative first; each prints one line
#   RESULT <stage>: PASS|FAIL|SKIP (<seconds>s) <what it found>
# and the run stops at the first FAIL (but resnet50's), leaving the evidence (the stage's
# log, its CUDA_LAUNCH_BLOCKING=1 rerun where it ran device code) in
# $OUT/logs.tgz and $OUT/summary.md. The limits (seconds; what a GPU run
# should take in brackets):
#   environment  20 ( 5)  nvidia-smi, nvcc, cmake, python/torch, the plans
#   configure    60 (15)  -DREMAT_ENABLE_MLIR=OFF -DREMAT_ENABLE_CUDA=ON in
#                         $BUILD (build-device); nlohmann_json and Catch2
#                         from .deps where the machine lacks them; says
#                         whether NCCL was found (the toolkit's, or the
#                         PyTorch wheel's nvidia/nccl)
#   build       150 (90)  remat-run, remat-unit-cuda
#   kernels      40 (10)  the kernel-vs-CPU cases (CudaOpsTest.cpp: every
#                         op family against the CPU backend)
#   whole-model  75 (30)  $WHOLE-all (store-all) and $WHOLE-50 (half the
#                         activations; GPT-2 124M), $STEPS_WHOLE steps each
#                         with --dump-grads: arena + workspace within the
#                         budget, the device's used bytes accounted for
#                         (arena + workspace + runtime overhead), losses and
#                         step-1 gradients bitwise equal across the budgets
#                         (a finding either way: if not, the largest
#                         difference, and a rerun of store-all with the
#                         budget's workspace says why)
#   profile      30 (10)  remat-run profile of both whole-model plans
#                         (every op call timed: $OUT/profiles/NAME.json, a
#                         profile to plan the GPU with); device memory of
#                         the profiled run within each plan's budget, and
#                         the recomputations' measured share beside the
#                         modeled overhead (issue #13)
#   bf16         45 (25)  $WHOLE-bf16 (GPT-2 124M store-all with --precision
#                         bf16: bf16 cuBLAS GEMMs, other ops on float
#                         copies), $STEPS_WHOLE steps, its memory checked
#                         as whole-model's, then tools/bench/
#                         torch_gpu_bench.py --models gpt2 --modes
#                         eager,autocast on the same device: step time and
#                         device peak against the whole-model stage's
#                         float32 run and PyTorch (logs/bf16.md, in the
#                         summary; tests/device/bf16_table.py). SKIP
#                         without the plan
#   nccl         30 (15)  $WHOLE-all again through NCCL with one rank
#                         (--comm nccl: a one-rank communicator, every
#                         gradient through ncclAllReduce, graphs off)
#                         against the whole-model stage's plain run: losses
#                         and step-1 gradients bitwise (a finding either
#                         way: if not, the largest difference); SKIP when
#                         the build has no NCCL
#   unit-cuda    45 (20)  every [cuda] test case (the emulator: kernels 60,
#                         unit-cuda 120; it runs them far slower)
#   sanitizer    50 (40)  compute-sanitizer racecheck, then synccheck, on
#                         the cases of the kernels with shared memory or
#                         warp shuffles (SANITIZE_CASES); half the limit
#                         each; a tool that runs out of time is reported
#                         "incomplete", not failed
#   resnet50     60 (30)  $PLANS_DIR/resnet50/{all,half}.plan (torchvision's
#                         resnet50, batch 32, 224 x 224, store-all and half
#                         the activations; carried without weights) by
#                         tools/bench/resnet50_gpu.py: the weights made
#                         here from the export's seed (torchvision, or
#                         tools/bench/resnet_def.py without it), one fixed
#                         batch, 4 steps each, then PyTorch eager on the
#                         same GPU, weights and batch: losses (the plans
#                         bitwise equal to each other: a finding either
#                         way; the first within 1e-4 relative of
#                         PyTorch's), step time, device memory
#                         (logs/resnet50.md, in the summary). SKIP without
#                         the plans or PyTorch's CUDA (emulator: 90 s, a
#                         small ResNet of resnet50's blocks, PyTorch on
#                         the CPU). The one stage whose failure does not
#                         stop the run: bench still runs, the exit status
#                         is 1
#   bench      rest       the other plans of $PLANS_DIR ($STEPS steps,
#                         $STEPS_LARGE for *maxb* plans, at most 45 s each;
#                         the largest batches, whose tensors pass 2^31
#                         elements, before the PyTorch peer), then
#                         tools/bench/torch_gpu_bench.py (eager and
#                         checkpoint) with what is left
# then summary.md (stages, memory and bitwise tables, the PyTorch peer).
# A stage that ran device code and failed is rerun once with
# CUDA_LAUNCH_BLOCKING=1 REMAT_CUDA_GRAPHS=0 (a fault then surfaces at the
# launch that caused it: the error names the kernel); for the unit tests
# only the first failing case is rerun (a sticky fault fails every later
# case). A failing bench plan gets the same rerun and the others still run.
#
# EMULATOR=1 runs the same stages against the CPU emulator (docs/cuda.md):
# the backend is built with REMAT_CUDA_EMULATOR=ON, WHOLE defaults to
# gpt2-tiny (PLAN_SET=emulator tests/device/device-plans.sh compiles the
# plans), the sanitizer is skipped (it needs a GPU) and the PyTorch peer
# runs tiny on the CPU. .ci/run does this; it proves the script.
#
# Environment: OUT (results; default ./device-check-out), BUILD, PLANS_DIR
# (.plans), WHOLE, STEPS (10), STEPS_WHOLE (6), STEPS_LARGE (4), TOTAL_S
# (300), PYTHON (python3, the one with PyTorch), TORCH_ARGS (extra peer
# arguments, after the defaults), SANITIZE_CASES, REMAT_CUDA_* (passed to
# the backend). BREAK_BUILD=1 makes every compile fail (a compiler launcher
# that refuses), to check that a broken build stops the run at "build"
# within a minute (tests/e2e/device_check.py).
# Exit status: 0 when every stage passed or was skipped as it should be,
# 1 when one failed (the run stopped there; bench failures are counted at
# the end).
set -uo pipefail

# BREAK_BUILD=1 configures this as the compiler launcher: a compile error.
if [[ "${1:-}" == --broken-compiler ]]; then
  echo "error: a compile error injected by BREAK_BUILD=1 (tests/device/device-check.sh)" >&2
  exit 1
fi

# The Python helpers beside this script (junit_report.py, run_memory.py,
# profile_table.py, summary.py; standard library only).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${OUT:-$PWD/device-check-out}"
emulator="${EMULATOR:-0}"
build="${BUILD:-$root/build-device}"
plans_dir="${PLANS_DIR:-$root/.plans}"
whole="${WHOLE:-$([[ $emulator == 1 ]] && echo gpt2-tiny || echo gpt2-124M)}"
steps="${STEPS:-10}"
steps_whole="${STEPS_WHOLE:-6}"
steps_large="${STEPS_LARGE:-4}"
total_s="${TOTAL_S:-300}"
python="${PYTHON:-python3}"
sanitize_cases="${SANITIZE_CASES:-cuda softmax and softmax_grad match the cpu,cuda layer_norm and layer_norm_grad match the cpu,cuda losses and their gradients match the cpu,cuda attention and attention_grad match the cpu,cuda row kernels match the cpu on rows wider than a block*}"

logs="$out/logs"
mkdir -p "$out"
rm -rf "$logs" "$out/logs.tgz" "$out/summary.md"
mkdir -p "$logs/bench"
results="$logs/results.tsv"
printf 'stage\tresult\tseconds\tdetail\n' > "$results"
start=$(date +%s)
failed_stage=""
unit="$build/tests/unit/cuda/remat-unit-cuda"
runner="$build/runtime/remat-run"

now() { date +%s; }
elapsed() { echo $(( $(now) - start )); }
# Seconds left before the summary (kept 10 s for it).
left() { echo $(( total_s - 10 - $(elapsed) )); }

# result STAGE PASS|FAIL|SKIP SECONDS DETAIL
result() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$results"
  echo "RESULT $1: $2 (${3}s) $4"
}

# tmo SECONDS CMD...: CMD under timeout (rc 124 when it ran out of time).
tmo() {
  local s="$1"
  shift
  (( s < 1 )) && s=1
  timeout --kill-after=5 "$s" "$@"
}

# stage NAME LIMIT FUNCTION: runs FUNCTION (output to logs/NAME.log) with
# stage_end = now + min(LIMIT, what is left); FUNCTION sets `detail` and
# returns 0 (PASS), 77 (SKIP) or anything else (FAIL; 124: out of time).
stage() {
  local name="$1" limit="$2" fn="$3" budget t0 rc
  budget=$(left)
  (( limit < budget )) && budget=$limit
  if (( budget < 5 )); then
    result "$name" FAIL 0 "no time left of the ${total_s}s run"
    failed_stage="$name"
    return 1
  fi
  stage_end=$(( $(now) + budget ))
  detail=""
  echo "== $name (limit ${budget}s)"
  t0=$(now)
  "$fn" > "$logs/$name.log" 2>&1
  rc=$?
  local took=$(( $(now) - t0 ))
  if (( rc == 0 )); then
    result "$name" PASS "$took" "$detail"
  elif (( rc == 77 )); then
    result "$name" SKIP "$took" "$detail"
  else
    (( rc == 124 )) && detail="out of time after ${budget}s; $detail"
    result "$name" FAIL "$took" "${detail:-exit $rc} (logs/$name.log)"
    tail -n 15 "$logs/$name.log" | sed 's/^/   /'
    failed_stage="$name"
    return 1
  fi
}
stage_left() { echo $(( stage_end - $(now) )); }

# The first failing test case of a Catch2 JUnit report, as a test spec
# (its commas and brackets escaped).
first_failed_case() {
  "$python" "$here/junit_report.py" first-failed-case "$1"
}

# A Catch2 JUnit report: the first failures' messages, then one line
# "N cases, F failed[: first case]".
junit_summary() {
  "$python" "$here/junit_report.py" summary "$1"
}

# blocking_rerun NAME SECONDS CMD...: CMD again with launches synchronous
# and graphs off, so a device fault names the kernel that caused it.
blocking_rerun() {
  local name="$1" s="$2"
  shift 2
  local budget
  budget=$(left)
  (( s < budget )) && budget=$s
  if (( budget < 5 )); then
    echo "   (no time left for the CUDA_LAUNCH_BLOCKING=1 rerun of $name)"
    return
  fi
  echo "   rerun with CUDA_LAUNCH_BLOCKING=1 REMAT_CUDA_GRAPHS=0 -> logs/$name.blocking.log"
  CUDA_LAUNCH_BLOCKING=1 REMAT_CUDA_GRAPHS=0 tmo "$budget" "$@" \
    > "$logs/$name.blocking.log" 2>&1
  grep -E -m 3 "launch of|failed:|error|FAILED" "$logs/$name.blocking.log" |
    sed 's/^/   /'
}

# Catch2 cases: NAME SPEC... (JUnit report in logs/NAME.xml). On failure the
# first failing case is rerun alone, blocking.
run_cases() {
  local name="$1"
  shift
  echo "remat-unit-cuda $*"
  # --skip-without-device: exit 77 where the tests see no device, which is
  # a failure here (the GPU tests must not pass by skipping).
  tmo "$(stage_left)" "$unit" --skip-without-device "$@" -# -r junit \
    -o "$logs/$name.xml"
  local rc=$?
  if (( rc == 77 )); then
    detail="the tests see no CUDA device"
    return 1
  fi
  local report
  report="$(junit_summary "$logs/$name.xml")"
  echo "$report"
  detail="$(tail -n 1 <<< "$report")"
  return $rc
}

finish() {
  summarize
  if [[ -d "$logs" ]]; then
    cp "$out/summary.md" "$logs/" 2>/dev/null
    tar -czf "$out/logs.tgz" -C "$out" logs && cp "$results" "$out/results.tsv" &&
      rm -rf "$logs"
  fi
  echo
  cat "$out/summary.md"
  echo
  echo "device-check: $( [[ -z $failed_stage ]] && echo PASS || echo "FAIL at $failed_stage") in $(elapsed)s (budget ${total_s}s); $out/summary.md, $out/logs.tgz"
}

#===--------------------------------------------------------------------===#
# Stages
#===--------------------------------------------------------------------===#

stage_environment() {
  local ok=0
  if [[ $emulator == 1 ]]; then
    echo "EMULATOR=1: no GPU needed (nvidia-smi skipped)"
  else
    tmo 10 nvidia-smi || { echo "nvidia-smi failed: no GPU visible"; ok=1; }
    [[ -x /usr/local/cuda/bin/nvcc ]] && export PATH="$PATH:/usr/local/cuda/bin"
    echo "nvcc: $(command -v nvcc || echo 'not on PATH')"
    nvcc --version 2>&1 | tail -2
    command -v nvcc > /dev/null || ok=1
  fi
  cmake --version | head -1 || ok=1
  command -v ninja > /dev/null && echo "ninja $(ninja --version)"
  g++ --version | head -1
  tmo "$(stage_left)" "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())" 2>&1 | tail -1
  local missing=()
  for p in "$whole-all" "$whole-50"; do
    [[ -f "$plans_dir/$p.plan" ]] || missing+=("$p.plan")
  done
  if (( ${#missing[@]} )); then
    echo "missing under $plans_dir: ${missing[*]} (run tests/device/device-plans.sh here and carry .plans)"
    ok=1
  fi
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
  detail="${gpu:-$([[ $emulator == 1 ]] && echo 'CPU emulator' || echo 'no GPU')}; $(ls "$plans_dir"/*.plan 2>/dev/null | wc -l) plans${missing:+; missing ${missing[*]}}"
  return $ok
}

stage_configure() {
  local generator=() option=-DREMAT_ENABLE_CUDA=ON launcher=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  [[ $emulator == 1 ]] && option=-DREMAT_CUDA_EMULATOR=ON
  if [[ "${BREAK_BUILD:-0}" == 1 ]]; then
    # Every compile fails (CMake's own compiler checks do not use it).
    launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=$here/device-check.sh;--broken-compiler"
              "-DCMAKE_CUDA_COMPILER_LAUNCHER=$here/device-check.sh;--broken-compiler")
  fi
  # NCCL may come with PyTorch's wheel (nvidia/nccl): this python's.
  local python_path
  python_path=$(command -v "$python" || true)
  tmo "$(stage_left)" cmake "${generator[@]}" -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release -DREMAT_ENABLE_MLIR=OFF -DREMAT_ENABLE_TESTS=ON \
    ${python_path:+"-DREMAT_NCCL_PYTHON=$python_path"} \
    "$option" "${launcher[@]}"
  local rc=$?
  local nccl
  nccl=$(grep -o -m 1 "NCCL: .*" "$logs/configure.log")
  detail="$build$([[ $emulator == 1 ]] && echo ' (emulator)'); ${nccl:-NCCL: not reported}"
  return $rc
}

stage_build() {
  tmo "$(stage_left)" cmake --build "$build" -j "$(nproc)" --target remat-run \
    remat-unit-cuda
  local rc=$?
  local warnings
  warnings=$(grep -c -i "warning:" "$logs/build.log")
  local first_error
  first_error=$(grep -m 1 -E "error:|Error " "$logs/build.log" | cut -c1-160)
  detail="$warnings warnings${first_error:+; first error: $first_error}"
  return $rc
}

stage_kernels() {
  run_cases kernels "[#CudaOpsTest]"
  local rc=$?
  if (( rc != 0 && rc != 124 )); then
    local case
    case=$(first_failed_case "$logs/kernels.xml")
    blocking_rerun kernels 30 "$unit" "${case:-[#CudaOpsTest]}" -# -d yes
  fi
  return $rc
}

# run_plan TAG PLAN STEPS [remat-run args]: PLAN.plan for STEPS steps, its
# output in logs/bench/TAG.{txt,jsonl}.
run_plan() {
  local tag="$1" plan="$2" n="$3"
  shift 3
  tmo "$(stage_left)" "$runner" "$plans_dir/$plan.plan" --backend cuda \
    --steps "$n" --log "$logs/bench/$tag.jsonl" "$@" > "$logs/bench/$tag.txt" 2>&1
}

# run_checked RERUN LIMIT NAME [remat-run args]: NAME.plan for $steps_whole
# steps (run_plan); on failure `detail` names its first error, and a rerun
# blocking (logs/RERUN.blocking.log, at most LIMIT s) says which kernel.
run_checked() {
  local rerun="$1" limit="$2" name="$3" rc
  shift 3
  echo "remat-run $name.plan --steps $steps_whole $*"
  run_plan "$name" "$name" "$steps_whole" "$@"
  rc=$?
  tail -n 4 "$logs/bench/$name.txt"
  if (( rc != 0 )); then
    detail="$name failed: $(grep -m 1 'error' "$logs/bench/$name.txt" | cut -c1-200)"
    (( rc != 124 )) && blocking_rerun "$rerun" "$limit" "$runner" \
      "$plans_dir/$name.plan" --backend cuda --steps 2
  fi
  return $rc
}

# The memory check of a run's log: arena + workspace within the budget, the
# used bytes accounted for. Prints a line; fails on OVER.
check_memory() {
  "$python" "$here/run_memory.py" "$logs/bench/$1.jsonl" "$plans_dir/$1.plan"
}

# The workspace split a run printed: "CUBLAS SCRATCH".
workspace_split() {
  sed -n 's/.*cuda workspace: cuBLAS \([0-9]*\) B, kernel scratch \([0-9]*\) B.*/\1 \2/p' \
    "$logs/bench/$1.txt" | head -1
}

stage_whole_model() {
  local all="$whole-all" half="$whole-50" rc=0 name
  for name in "$all" "$half"; do
    run_checked "whole-model-$name" 40 "$name" --dump-grads \
      "$logs/bench/$name.grads.safetensors" || return
  done
  local memory_all memory_half
  memory_all=$(check_memory "$all") || rc=1
  memory_half=$(check_memory "$half") || rc=1
  echo "$all: $memory_all"
  echo "$half: $memory_half"
  local bitwise
  bitwise=$("$python" "$root/tools/bench/budgets_bitwise.py" \
    --a "$all=$logs/bench/$all.jsonl,$logs/bench/$all.grads.safetensors" \
    --b "$half=$logs/bench/$half.jsonl,$logs/bench/$half.grads.safetensors" \
    --out "$logs/bitwise.json")
  echo "$bitwise"
  if grep -q "bitwise: NO" <<< "$bitwise"; then
    # Why: store-all again with the budgeted run's cuBLAS workspace and
    # attention scratch.
    local split
    split=($(workspace_split "$half"))
    if (( ${#split[@]} == 2 )) && (( $(stage_left) > 10 )); then
      echo "rerun $all with $half's workspace: cuBLAS ${split[0]} B, scratch ${split[1]} B"
      REMAT_CUDA_CUBLAS_WORKSPACE_BYTES="${split[0]}" \
        REMAT_CUDA_ATTENTION_SCRATCH_BYTES="${split[1]}" \
        run_plan "$all-ws" "$all" "$steps_whole" --dump-grads \
        "$logs/bench/$all-ws.grads.safetensors"
      bitwise=$("$python" "$root/tools/bench/budgets_bitwise.py" \
        --a "$all=$logs/bench/$all.jsonl,$logs/bench/$all.grads.safetensors" \
        --b "$half=$logs/bench/$half.jsonl,$logs/bench/$half.grads.safetensors" \
        --same-workspace "$logs/bench/$all-ws.jsonl,$logs/bench/$all-ws.grads.safetensors" \
        --out "$logs/bitwise.json")
      echo "$bitwise"
    fi
  fi
  detail="$(head -1 <<< "$bitwise" | sed 's/^[^:]*: //')$(grep '^why:' <<< "$bitwise" | sed 's/^/; /'); $half: $memory_half"
  return $rc
}

# profile: remat-run profile of the whole-model plans on the CUDA backend
# (issue #13): every op call timed, written to $OUT/profiles/NAME.json (a
# GPU profile to plan with: remat compile --device-profile FILE); per plan
# the recomputations' measured share of the store-all step beside the
# plan's modeled overhead, and the profiled run's device memory against
# the plan's budget (arena + workspace within it, the used bytes adding up
# as in whole-model). Table: logs/profile.md, in summary.md.
stage_profile() {
  local name
  mkdir -p "$out/profiles"
  for name in "$whole-all" "$whole-50"; do
    echo "remat-run profile $name.plan --backend cuda --steps 3"
    tmo "$(stage_left)" "$runner" profile "$plans_dir/$name.plan" \
      --backend cuda --steps 3 -o "$out/profiles/$name.json" \
      > "$logs/bench/profile-$name.log" 2>&1
    local rc=$?
    tail -n 2 "$logs/bench/profile-$name.log"
    if (( rc != 0 )); then
      detail="$name: $(grep -m 1 'error' "$logs/bench/profile-$name.log" | cut -c1-200)"
      return $rc
    fi
  done
  detail=$("$python" "$here/profile_table.py" "$out/profiles" "$plans_dir" \
    "$logs/profile.md" "$whole-all" "$whole-50")
}

# bf16 (issue #36): the store-all plan in --precision bf16 against the
# whole-model stage's float32 run and PyTorch eager / autocast.
stage_bf16() {
  local name="$whole-bf16" rc=0 device=cuda torch_args=()
  if [[ ! -f "$plans_dir/$name.plan" ]]; then
    detail="no $name.plan (tests/device/device-plans.sh compiles it)"
    return 77
  fi
  run_checked bf16 30 "$name" || return
  local memory
  memory=$(check_memory "$name") || rc=1
  echo "$name: $memory"
  [[ $emulator == 1 ]] && { device=cpu; torch_args=(--tiny --steps 2 --warmup 1); }
  local torch_budget=$(( $(stage_left) - 5 )) py="$python"
  "$py" -c "import torch" 2> /dev/null ||
    { /usr/bin/python3 -c "import torch" 2> /dev/null && py=/usr/bin/python3; }
  if (( torch_budget >= 10 )); then
    echo "torch_gpu_bench.py --models gpt2 --modes eager,autocast (limit ${torch_budget}s)"
    tmo "$torch_budget" "$py" "$root/tools/bench/torch_gpu_bench.py" \
      --device "$device" --models gpt2 --modes eager,autocast \
      "${torch_args[@]}" --out "$logs/bf16-torch.json" 2>&1 | tail -n 3
  else
    echo "torch: skipped (time)"
  fi
  local table
  table=$("$python" "$here/bf16_table.py" "$logs" "$whole" "$logs/bf16.md") || rc=1
  echo "$table"
  detail="$(tail -n 1 <<< "$table"); $memory"
  return $rc
}

# One rank through NCCL against the whole-model stage's plain store-all
# run (the same plan, steps and seed): bitwise, or the largest difference.
stage_nccl() {
  local all="$whole-all" name="$whole-all-nccl"
  if grep -q -E "NCCL: (no|off)" "$logs/configure.log"; then
    detail="this build has no NCCL ($(grep -o -m 1 'NCCL: .*' "$logs/configure.log"))"
    return 77
  fi
  echo "remat-run $all.plan --steps $steps_whole --comm nccl --dump-grads"
  run_plan "$name" "$all" "$steps_whole" --comm nccl --dump-grads \
    "$logs/bench/$name.grads.safetensors"
  local rc=$?
  tail -n 4 "$logs/bench/$name.txt"
  if (( rc != 0 )); then
    if grep -q "has no NCCL" "$logs/bench/$name.txt"; then
      detail="the cuda backend has no NCCL"
      return 77
    fi
    detail="$all --comm nccl failed: $(grep -m 1 -E 'error|failed' "$logs/bench/$name.txt" | cut -c1-200)"
    (( rc != 124 )) && blocking_rerun "nccl" 20 "$runner" \
      "$plans_dir/$all.plan" --backend cuda --comm nccl --steps 2
    return $rc
  fi
  if ! grep -q "goes through nccl" "$logs/bench/$name.txt"; then
    detail="the run does not say it went through NCCL"
    return 1
  fi
  local bitwise
  bitwise=$("$python" "$root/tools/bench/budgets_bitwise.py" \
    --a "$all=$logs/bench/$all.jsonl,$logs/bench/$all.grads.safetensors" \
    --b "$name=$logs/bench/$name.jsonl,$logs/bench/$name.grads.safetensors" \
    --out "$logs/nccl-bitwise.json")
  local brc=$?
  echo "$bitwise"
  detail="one rank through ncclAllReduce vs plain: $(head -1 <<< "$bitwise" | sed 's/^[^:]*: //')"
  return $brc
}

stage_unit_cuda() {
  run_cases unit-cuda "[cuda]"
  local rc=$?
  if (( rc != 0 && rc != 124 )); then
    local case
    case=$(first_failed_case "$logs/unit-cuda.xml")
    [[ -n "$case" ]] && blocking_rerun unit-cuda 30 "$unit" "$case" -d yes
  fi
  return $rc
}

stage_sanitizer() {
  if [[ $emulator == 1 ]]; then
    detail="skipped on the emulator: compute-sanitizer needs a GPU"
    return 77
  fi
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ ! -x "$sanitizer" ]]; then
    detail="compute-sanitizer not found"
    return 1
  fi
  local tool rc failed=0 findings=()
  for tool in racecheck synccheck; do
    # racecheck gets half the stage, synccheck what is left.
    local limit
    limit=$(stage_left)
    [[ $tool == racecheck ]] && limit=$(( limit / 2 ))
    echo "== $tool (${limit}s): $sanitize_cases"
    tmo "$limit" "$sanitizer" --tool "$tool" --error-exitcode 3 \
      "$unit" "$sanitize_cases" > "$logs/$tool.txt" 2>&1
    rc=$?
    local summary
    summary=$(grep -E "(RACECHECK|ERROR) SUMMARY" "$logs/$tool.txt" | tail -1 |
      sed 's/^=* *//')
    if (( rc == 124 )); then
      findings+=("$tool incomplete (out of time; ${summary:-no summary})")
    elif (( rc != 0 )); then
      findings+=("$tool: ${summary:-exit $rc}")
      failed=1
    else
      findings+=("$tool: ${summary:-clean}")
    fi
    tail -n 20 "$logs/$tool.txt"
  done
  detail="$(IFS=';'; echo "${findings[*]}")"
  return $failed
}

# resnet50 on the CUDA backend against PyTorch on the same device:
# $PLANS_DIR/resnet50/{all,half}.plan (tests/device/device-plans.sh; no
# weights travel) run by tools/bench/resnet50_gpu.py, which makes the
# weights from the export's seed (torchvision's resnet50, or
# tools/bench/resnet_def.py's where torchvision is missing), then PyTorch
# eager (on the CPU under the emulator). Its table goes to logs/resnet50.md
# and the summary.
stage_resnet50() {
  local py="$python" device=cuda n=4 work rc
  "$py" -c "import torch" 2> /dev/null ||
    { /usr/bin/python3 -c "import torch" 2> /dev/null && py=/usr/bin/python3; }
  [[ $emulator == 1 ]] && { device=cpu; n=3; }
  work=$(mktemp -d)
  tmo "$(stage_left)" "$py" "$root/tools/bench/resnet50_gpu.py" run \
    "$plans_dir/resnet50" --runner "$runner" --work "$work" --device "$device" \
    --steps "$n" --deadline $(( $(stage_left) - 5 )) \
    --md "$logs/resnet50.md" --json "$logs/resnet50.json"
  rc=$?
  detail=$(sed -n 's/^RESULT //p; s/^SKIP: //p' "$logs/resnet50.log" | tail -1)
  # The first plan that failed, rerun blocking.
  local failed
  failed=$(sed -n 's/^remat failed: \([a-z]*\) rc.*/\1/p' <<< "$detail")
  if (( rc == 1 )) && [[ -n $failed ]]; then
    blocking_rerun resnet50 30 "$runner" "$plans_dir/resnet50/$failed.plan" \
      --backend cuda --steps 1 --weights "$work/weights.safetensors" \
      --data "x=$work/x.npy" --data "labels=$work/labels.npy"
  fi
  # The runs' logs stay; the weights and the batch (120 MB at batch 32) go.
  mkdir -p "$logs/resnet50"
  cp "$work"/*.jsonl "$work"/*.txt "$logs/resnet50/" 2> /dev/null
  rm -rf "$work"
  return $rc
}

stage_bench() {
  local plans=() name plan failed=0 ran=0
  for name in seed_mlp-1M gpt2-124M-75 gpt2-124M-min seed_mlp-maxb32 \
      gpt2-124M-maxb32; do
    [[ -f "$plans_dir/$name.plan" ]] && plans+=("$name")
  done
  shopt -s nullglob
  for plan in "$plans_dir"/*.plan; do
    name=$(basename "$plan" .plan)
    [[ "$name" == "$whole-all" || "$name" == "$whole-50" ||
      "$name" == "$whole-bf16" ]] && continue
    [[ " ${plans[*]} " == *" $name "* ]] || plans+=("$name")
  done
  # The PyTorch peer gets at least a third of what is left.
  local plans_end=$(( $(now) + $(stage_left) * 2 / 3 ))
  for name in "${plans[@]}"; do
    local n=$steps limit=$(( plans_end - $(now) ))
    [[ "$name" == *maxb* ]] && n=$steps_large
    (( limit > 45 )) && limit=45
    if (( limit < 5 )); then
      echo "$name: skipped (time)"
      printf '%s\tskipped\n' "$name" >> "$logs/bench/status.tsv"
      continue
    fi
    echo "remat-run $name.plan --steps $n (limit ${limit}s)"
    tmo "$limit" "$runner" "$plans_dir/$name.plan" --backend cuda --steps "$n" \
      --log "$logs/bench/$name.jsonl" > "$logs/bench/$name.txt" 2>&1
    local rc=$?
    tail -n 3 "$logs/bench/$name.txt"
    printf '%s\t%s\n' "$name" "$rc" >> "$logs/bench/status.tsv"
    ran=$((ran + 1))
    if (( rc != 0 )); then
      failed=$((failed + 1))
      (( rc != 124 )) && blocking_rerun "bench-$name" 30 "$runner" \
        "$plans_dir/$name.plan" --backend cuda --steps 1
    fi
  done
  local torch_budget=$(( $(stage_left) - 5 )) torch_rc=0
  local torch_args=(--batch 1000000 --modes eager,checkpoint)
  local device=cuda
  if [[ $emulator == 1 ]]; then
    torch_args=(--tiny --batch 8 --modes eager,checkpoint)
    device=cpu
  fi
  read -r -a extra <<< "${TORCH_ARGS:-}"
  if (( torch_budget >= 20 )); then
    echo "torch_gpu_bench.py (limit ${torch_budget}s)"
    tmo "$torch_budget" "$python" "$root/tools/bench/torch_gpu_bench.py" \
      --device "$device" "${torch_args[@]}" --deadline $(( torch_budget - 15 )) \
      --out "$logs/torch.json" "${extra[@]}" > "$logs/torch.log" 2>&1
    torch_rc=$?
    tail -n 6 "$logs/torch.log"
  else
    echo "torch: skipped (time)"
    torch_rc=125
  fi
  detail="$ran of ${#plans[@]} plans ran, $failed failed; pytorch $( ((torch_rc == 0)) && echo ok || echo "rc $torch_rc")"
  (( failed == 0 ))
}

#===--------------------------------------------------------------------===#
# Summary
#===--------------------------------------------------------------------===#

summarize() {
  "$python" "$here/summary.py" "$logs" "$plans_dir" "$total_s" "$(elapsed)" \
    "${failed_stage:-}" > "$out/summary.md"
}

#===--------------------------------------------------------------------===#
# The run
#===--------------------------------------------------------------------===#

trap finish EXIT
echo "device-check: $([[ $emulator == 1 ]] && echo 'on the CPU emulator' || echo 'on the GPU'), ${total_s}s budget, results in $out"
# The emulator runs the test cases far slower than a GPU (it has no
# sanitizer stage to spend the time on): their stages get more of the run.
emu_more() { [[ $emulator == 1 ]] && echo "$2" || echo "$1"; }
stage environment 20 stage_environment &&
  stage configure 60 stage_configure &&
  stage build 150 stage_build &&
  stage kernels "$(emu_more 40 60)" stage_kernels &&
  stage whole-model 75 stage_whole_model &&
  stage profile "$(emu_more 30 45)" stage_profile &&
  stage bf16 "$(emu_more 45 60)" stage_bf16 &&
  stage nccl 30 stage_nccl &&
  stage unit-cuda "$(emu_more 45 120)" stage_unit_cuda &&
  stage sanitizer 50 stage_sanitizer &&
  { stage resnet50 "$(emu_more 60 90)" stage_resnet50 || resnet50_failed=1; } &&
  stage bench "$total_s" stage_bench
status=$?
[[ $status != 0 && -z $failed_stage ]] && failed_stage=bench
# resnet50 compares, it does not gate: bench still runs after its failure,
# and the run fails.
(( ${resnet50_failed:-0} )) && status=1
exit $(( status == 0 ? 0 : 1 ))
