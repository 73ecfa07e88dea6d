#!/usr/bin/env bash
# Installs the Debian packages remat needs when they are missing, then
# configures and builds. Idempotent; quiet when everything is already there.
#   tools/setup.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"

packages=(cmake ninja-build g++ pkg-config python3
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  catch2 nlohmann-json3-dev coinor-libcbc-dev libopenblas-dev
  libonnx-dev libdnnl-dev
  python3-torch python3-numpy python3-onnx)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  # python3-torch is a reference for tests and benchmarks only; its absence
  # makes those tests skip, so a failure to install it is not fatal.
  core=(); for p in "${missing[@]}"; do [[ $p == python3-torch ]] || core+=("$p"); done
  if ((${#core[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${core[@]}" >/dev/null
  fi
  if [[ " ${missing[*]} " == *" python3-torch "* ]]; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch >/dev/null \
      || echo "setup: python3-torch unavailable; PyTorch parity tests will skip"
  fi
fi

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" -j"$(nproc)"
