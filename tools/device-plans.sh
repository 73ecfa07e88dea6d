#!/usr/bin/env bash
# Compiles the plans the GPU benchmark needs into .plans/ (ignored by git),
# here, where MLIR exists; the device tool carries them with
#   run(command="tools/device-check.sh", carry=[".plans"], timeout_s=540)
# Plans (issue 5's benchmarks):
#   seed_mlp-1M          the forum's model at batch 1,000,000, store-all
#   gpt2-124M-all        GPT-2 124M, batch 8, seq 1024, f32, store-all
#   gpt2-124M-75 / -50   at 75% / 50% of the store-all activation memory
#   gpt2-124M-min        at the minimum feasible budget
# Each plan's memory report sits beside it (NAME.json).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
remat="${REMAT:-$root/build/tools/remat/remat}"
out="$root/.plans"
mkdir -p "$out"
compile() {
  local name="$1"; shift
  "$remat" compile "$@" --emit=plan -o "$out/$name.plan" --report "$out/$name.json"
}
compile seed_mlp-1M "$root/models/seed_mlp.json" --set batch=1000000
compile gpt2-124M-all "$root/models/gpt2.json" --set dropout=0
read -r persistent acts < <(python3 -c "
import json; r = json.load(open('$out/gpt2-124M-all.json')); b = r['breakdown']
a = b['activations'] + b['grads']; print(r['planned_peak_bytes'] - a, a)")
compile gpt2-124M-75 "$root/models/gpt2.json" --set dropout=0 --budget $((persistent + acts * 3 / 4))
compile gpt2-124M-50 "$root/models/gpt2.json" --set dropout=0 --budget $((persistent + acts / 2))
# A 1-byte budget fails and names the minimum feasible budget.
minimum=$({ "$remat" plan "$root/models/gpt2.json" --set dropout=0 --budget 1 2>&1 || true; } \
  | sed -n 's/.*minimum feasible budget: \([0-9]*\) bytes.*/\1/p')
compile gpt2-124M-min "$root/models/gpt2.json" --set dropout=0 --budget "$minimum"
du -sh "$out"
