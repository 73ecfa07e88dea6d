#!/usr/bin/env bash
# Sets up (installs missing packages, builds) and runs the main job on a
# model: today `remat compile` of GPT-2 (tiny preset) to verified graph IR.
#   tools/demo.sh [MODEL] [remat compile options...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${REMAT_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh" "$build" >&2
model="${1:-$root/models/gpt2.json}"
shift || true
if [[ $# -eq 0 ]]; then set -- --preset tiny; fi
"$build/tools/remat/remat" compile "$model" --emit=graph "$@"
