#!/usr/bin/env bash
# device-check.sh: the one prepared check for the GPU machine (CUDA, CMake,
# Ninja, PyTorch with CUDA; no MLIR, no network). Run from anywhere:
#
#   tools/device-check.sh                 # results under $OUT (or ./device-check-out)
#
# Stages, each under `timeout` and a global deadline (TOTAL_S, default 465 s,
# so the whole run stays under 8 minutes):
#   1. nvidia-smi                                     (   5 s)
#   2. configure the runtime-only build               (  45 s)
#      -DREMAT_ENABLE_MLIR=OFF -DREMAT_ENABLE_CUDA=ON in $BUILD (build-device);
#      nlohmann_json and Catch2 come from .deps/ where the machine lacks them
#   3. build remat (run only), remat-unit-cuda        ( 150 s)
#   4. the [cuda] unit tests                          (  90 s)
#   5. every plan under .plans/*.plan (filled here by tools/device-plans.sh,
#      passed with the run tool's carry option):
#      remat run PLAN --backend cuda --steps $STEPS --log  ( 150 s in all;
#      $STEPS_LARGE steps for the *-maxb32 plans)
#   6. the PyTorch peer tools/bench/torch_gpu_bench.py, seed_mlp at batch
#      1,000,000: eager and checkpoint timed, then the largest batch under
#      32 GiB, then torch.compile (what is left of the time; configurations
#      not started 40 s before the stage's end are recorded as skipped)
#   5b. compute-sanitizer --tool memcheck over the [cuda] tests   ( 60 s)
#   7. summary table (printed last, also $OUT/summary.md); every log is
#      packed into $OUT/logs.tgz (the run tool brings back 8 files at most)
# Environment: OUT, BUILD, PLANS_DIR (.plans), STEPS (20), STEPS_LARGE (6),
# TOTAL_S (465), BACKEND (cuda; cpu for a dry run of the script on a machine
# without GPU), PYTHON (python3: the one with PyTorch), TORCH_ARGS (extra
# arguments for the peer script, after the defaults, e.g. "--batch 4096"),
# REMAT_CUDA_* (passed through to the backend, see docs/cuda.md).
# EMULATOR=1 builds the backend for the CPU emulator (docs/cuda.md) instead
# of nvcc: the whole script, cuda backend included, runs without a GPU
# (memcheck skipped; the PyTorch peer on the CPU unless TORCH_DEVICE says).
# Dry runs here: EMULATOR=1 (or BACKEND=cpu) PYTHON=/usr/bin/python3
#   PLANS_DIR=<tiny plans> TORCH_ARGS="--tiny --batch 8" tools/device-check.sh
#
# Here, before the call:  tools/device-plans.sh   (fills .plans and .deps)
# The call:  run(command="tools/device-check.sh", carry=[".plans", ".deps"],
#                timeout_s=540)
# Exit status: 0 when the build and the unit tests passed, 1 otherwise
# (benchmark failures are reported in the table, not in the status).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$PWD/device-check-out}"
build="${BUILD:-$root/build-device}"
plans_dir="${PLANS_DIR:-$root/.plans}"
steps="${STEPS:-20}"
steps_large="${STEPS_LARGE:-6}"
python="${PYTHON:-python3}"
backend="${BACKEND:-cuda}"
emulator="${EMULATOR:-0}"
torch_device="${TORCH_DEVICE:-$backend}"
[[ "$emulator" == 1 && -z "${TORCH_DEVICE:-}" ]] && torch_device=cpu
total_s="${TOTAL_S:-465}"
# Everything goes to $out/logs, packed into $out/logs.tgz at the end (the
# run tool brings back at most 8 files): $out holds summary.md and logs.tgz.
logs="$out/logs"
rm -rf "$logs" "$out/logs.tgz"
mkdir -p "$logs/bench"
pack() {
  [[ -d "$logs" ]] || return 0
  tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$logs"
}
trap pack EXIT
start=$(date +%s)
status_file="$logs/stages.tsv"
printf 'stage\trc\tseconds\n' > "$status_file"

remaining() { echo $(( total_s - ($(date +%s) - start) )); }

# stage NAME BUDGET_S LOGFILE CMD...: runs CMD under timeout min(BUDGET,
# remaining), records rc and seconds; rc 124 = timed out.
stage() {
  local name="$1" budget="$2" log="$3"
  shift 3
  local left
  left=$(remaining)
  (( budget > left )) && budget=$left
  if (( budget < 5 )); then
    printf '%s\tskipped\t0\n' "$name" >> "$status_file"
    echo "== $name: skipped (global deadline)"
    return 125
  fi
  echo "== $name (limit ${budget}s)"
  local t0 rc
  t0=$(date +%s)
  timeout --kill-after=5 "$budget" "$@" > "$log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$status_file"
  tail -n 5 "$log" | sed 's/^/   /'
  return $rc
}

ok=1

# 1. The device.
stage nvidia-smi 5 "$logs/nvidia-smi.txt" nvidia-smi

# 1b. What the toolchain looks like (for a configure that fails: where nvcc
# and cuBLAS are; CMake also looks in the wheels' nvidia/cu13).
toolchain() {
  echo "nvcc: $(command -v nvcc || echo 'not on PATH')"
  ls -d /usr/local/cuda* 2>&1
  { nvcc --version || /usr/local/cuda/bin/nvcc --version; } 2>&1 | tail -2
  ls /usr/local/cuda/lib64 2>&1 | grep -i -E "cublas|cudart" | head
  "$python" -c "import torch, site; print('torch', torch.__version__, 'cuda', torch.version.cuda); print(site.getsitepackages())" 2>&1
  "$python" -c "import site, glob; [print(p) for d in site.getsitepackages() for p in glob.glob(d + '/nvidia/*/lib/libcublas.so*')]" 2>&1
  cmake --version | head -1; g++ --version | head -1
}
stage toolchain 20 "$logs/toolchain.txt" bash -c "$(declare -f toolchain); python=$python; toolchain"

# 2. Configure: runtime-only, CUDA on; tests off only if Catch2 is missing.
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cuda_option=-DREMAT_ENABLE_CUDA=ON
[[ "$emulator" == 1 ]] && cuda_option=-DREMAT_CUDA_EMULATOR=ON
configure=(cmake "${generator[@]}" -S "$root" -B "$build"
  -DCMAKE_BUILD_TYPE=Release -DREMAT_ENABLE_MLIR=OFF "$cuda_option")
if ! stage configure 45 "$logs/configure.log" "${configure[@]}" \
    -DREMAT_ENABLE_TESTS=ON; then
  echo "   configure failed; retrying without tests (Catch2 missing?)"
  stage configure-no-tests 45 "$logs/configure-no-tests.log" \
    "${configure[@]}" -DREMAT_ENABLE_TESTS=OFF || ok=0
fi

# 3. Build.
targets=(remat)
grep -q remat-unit-cuda "$build/build.ninja" "$build/Makefile" 2>/dev/null &&
  targets+=(remat-unit-cuda)
stage build 150 "$logs/build.log" \
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" || ok=0
grep -i "warning" "$logs/build.log" > "$logs/build-warnings.txt" || true

# 4. Unit tests ([cuda]).
unit="$build/tests/unit/cuda/remat-unit-cuda"
if [[ -x "$unit" ]]; then
  stage unit-cuda 90 "$logs/unit-cuda.txt" \
    "$unit" "[cuda]" --durations yes || ok=0
  if grep -q "no CUDA device; skipping" "$logs/unit-cuda.txt"; then
    echo "   WARNING: the GPU tests SKIPPED (no CUDA device visible)"
    [[ "$backend" == cuda ]] && ok=0
  fi
else
  echo "== unit-cuda: not built"
  ok=0
fi

# 5. Benchmark plans on the cuda backend.
remat="$build/tools/remat/remat"
bench_deadline=$(( $(date +%s) + 150 ))
shopt -s nullglob
# The forum's model and GPT-2 at store-all first (the targets), then the
# budgets, the max-batch plans last; anything else after them.
plans=()
for name in seed_mlp-1M gpt2-124M-all gpt2-124M-50 gpt2-124M-75 \
    gpt2-124M-min seed_mlp-maxb32 gpt2-124M-maxb32; do
  [[ -f "$plans_dir/$name.plan" ]] && plans+=("$plans_dir/$name.plan")
done
for plan in "$plans_dir"/*.plan; do
  [[ " ${plans[*]} " == *" $plan "* ]] || plans+=("$plan")
done
if (( ${#plans[@]} == 0 )); then
  echo "== bench: no plans under $plans_dir"
fi
for plan in "${plans[@]}"; do
  name="$(basename "$plan" .plan)"
  n=$steps
  [[ "$name" == *maxb* ]] && n=$steps_large
  left=$(( bench_deadline - $(date +%s) ))
  (( left > 60 )) && left=60
  if [[ ! -x "$remat" ]] || (( left < 5 )); then
    printf 'bench:%s\tskipped\t0\n' "$name" >> "$status_file"
    continue
  fi
  stage "bench:$name" "$left" "$logs/bench/$name.txt" \
    "$remat" run "$plan" --backend "$backend" --steps "$n" \
    --log "$logs/bench/$name.jsonl"
done

# 5b. compute-sanitizer memcheck over the [cuda] tests (out-of-bounds
# accesses that do not change a result), where the tool exists.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ "$backend" == cuda && "$emulator" != 1 && -x "$unit" && -x "$sanitizer" ]]; then
  stage memcheck 60 "$logs/memcheck.txt" "$sanitizer" --tool memcheck \
    --error-exitcode 3 "$unit" "[cuda]" || true
fi

# 6. The PyTorch peer (TORCH_ARGS: extra arguments, split on spaces, after
# the defaults so they override them).
torch_budget=$(( $(remaining) - 15 ))
read -r -a torch_args <<< "${TORCH_ARGS:-}"
stage torch "$torch_budget" "$logs/torch.log" \
  "$python" "$root/tools/bench/torch_gpu_bench.py" --device "$torch_device" \
  --batch 1000000 --max-batch-budget $((32 << 30)) \
  --deadline $(( torch_budget > 60 ? torch_budget - 40 : 20 )) \
  --out "$logs/torch.json" "${torch_args[@]}"

# 7. Summary table (last).
BACKEND="$backend" "$python" - "$logs" "$plans_dir" > "$out/summary.md" <<'PY'
import glob, json, os, re, statistics, sys
out, plans_dir = sys.argv[1], sys.argv[2]
MiB = 2 ** 20
def mib(v):
    return "-" if v in (None, "") else "%.1f" % (v / MiB)
print("## stages\n")
print("| stage | rc | s |\n|---|---|---|")
for line in open(os.path.join(out, "stages.tsv")).read().splitlines()[1:]:
    print("| " + " | ".join(line.split("\t")) + " |")
memcheck = os.path.join(out, "memcheck.txt")
if os.path.exists(memcheck):
    lines = [l.strip() for l in open(memcheck, errors="replace")
             if "ERROR SUMMARY" in l]
    print("\ncompute-sanitizer memcheck: %s" % (
        lines[-1] if lines else "no ERROR SUMMARY line (see memcheck.txt)"))
print("\n## remat run (--backend %s)\n" % os.environ.get("BACKEND", "cuda"))
print("within budget: peak - context <= budget (the context is outside the "
      "budget, DESIGN.md)\n")
print("| plan | batch | budget MiB | planned peak MiB | arena MiB "
      "| workspace MiB | device peak MiB | peak - context MiB "
      "| within budget | ms (median, steps 3+) | loss first -> last |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for txt in sorted(glob.glob(os.path.join(out, "bench", "*.txt"))):
    name = os.path.basename(txt)[:-len(".txt")]
    log = os.path.join(out, "bench", name + ".jsonl")
    rows = ([json.loads(l) for l in open(log) if l.strip()]
            if os.path.exists(log) else [])
    plan = {}
    try:
        plan = json.load(open(os.path.join(plans_dir, name + ".plan")))
    except Exception:
        pass
    report = plan.get("report", {})
    header = open(txt).read()
    ws = re.search(r"workspace (\d+) B", header)
    timed = [r["ms"] for r in rows[2:]] or [r["ms"] for r in rows]
    peak = max((r.get("device_peak_bytes", 0) for r in rows), default=0)
    context = max((r.get("device_context_bytes", 0) for r in rows), default=0)
    budget = report.get("budget_bytes")
    within = "-"
    if budget and peak and context:
        within = "yes" if peak - context <= budget else "NO"
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, plan.get("batch", "-"), mib(budget),
        mib(report.get("planned_peak_bytes")), mib(plan.get("arena_bytes")),
        mib(int(ws.group(1))) if ws else "-", mib(peak) if peak else "-",
        mib(peak - context) if peak and context else "-", within,
        "%.2f" % statistics.median(timed) if timed else "-",
        "%.4g -> %.4g" % (rows[0]["loss"], rows[-1]["loss"]) if rows
        else "failed (see bench/%s.txt)" % name))
print("\n## pytorch peer\n")
try:
    torch = json.load(open(os.path.join(out, "torch.json")))
    print("torch %s on %s\n" % (torch["torch"], torch["device_name"]))
    print("| model | mode | budget | batch | ms (median) "
          "| max_memory_allocated MiB | status |")
    print("|---|---|---|---|---|---|---|")
    for r in torch["results"]:
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["mode"], "" if r.get("budget") is None
            else r["budget"], r.get("batch", ""),
            "%.2f" % r["ms_median"] if "ms_median" in r else "-",
            mib(r.get("max_memory_allocated")),
            r["status"] + ("" if r["status"] == "ok"
                           else ": " + r.get("error", "")[:80])))
    if torch.get("max_batch"):
        print("\n## largest batch under the budget (pytorch)\n")
        print("| model | mode | budget MiB | max batch | ms at it "
              "| max_memory_allocated MiB | max_memory_reserved MiB "
              "| trials | s | status |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in torch["max_batch"]:
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["model"], r["mode"], mib(r.get("budget_bytes")),
                r.get("max_batch", "-"),
                "%.1f" % r["step_ms"] if r.get("step_ms") else "-",
                mib(r.get("max_memory_allocated")),
                mib(r.get("max_memory_reserved")), r.get("trials", "-"),
                "%.0f" % r.get("seconds", 0), r.get("status", "-")))
except Exception as e:
    print("no PyTorch results (%s)" % e)
PY
echo
cat "$out/summary.md"
cp "$out/summary.md" "$logs/"
echo
echo "device-check: $( ((ok)) && echo PASS || echo FAIL ) in $(( $(date +%s) - start ))s; results in $out"
exit $(( ok ? 0 : 1 ))
