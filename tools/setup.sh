#!/usr/bin/env bash
# Installs the Debian packages remat needs when they are missing, then
# configures and builds. Idempotent; quiet when everything is already there.
#   tools/setup.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"

packages=(cmake ninja-build g++ pkg-config python3
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  catch2 nlohmann-json3-dev coinor-libcbc-dev libopenblas-dev libopenblas0-openmp
  libonnx-dev libdnnl-dev libopenmpi-dev openmpi-bin
  python3-torch python3-torchvision python3-numpy python3-onnx)
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
  # PyTorch, torchvision and the onnx module serve tests and benchmarks only;
  # their absence makes those tests skip, so a failure to install them is
  # not fatal.
  optional=(python3-torch python3-torchvision python3-onnx)
  core=(); opt=()
  for p in "${missing[@]}"; do
    if [[ " ${optional[*]} " == *" $p "* ]]; then opt+=("$p"); else core+=("$p"); fi
  done
  if ((${#core[@]})); then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${core[@]}" >/dev/null
  fi
  for p in "${opt[@]}"; do
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$p" >/dev/null \
      || echo "setup: $p unavailable; the tests that need it will skip"
  done
fi

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" -j"$(nproc)"
