#!/usr/bin/env bash
# Sets up (installs missing packages, builds) and runs the main job: compile
# a model under a memory budget and run training steps on the CPU.
#   tools/demo.sh                       GPT-2 tiny, 300 steps, 560000-byte budget
#   tools/demo.sh MODEL [remat train options...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${REMAT_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh" "$build" >&2
remat="$build/tools/remat/remat"
if [[ $# -eq 0 ]]; then
  set -- "$root/models/gpt2.json" --preset tiny --budget 560000 --steps 300
fi
"$remat" train "$@"
