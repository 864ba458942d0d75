#!/usr/bin/env bash
# Installs the Debian packages devplace builds against; skips everything already installed.
# Idempotent: safe to run on every build. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread libgloo-dev libeigen3-dev
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libcli11-dev libspdlog-dev libfmt-dev
  libscotch-dev libmetis-dev gnuplot-nox
  libonnx-dev libprotobuf-dev protobuf-compiler zlib1g-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-torch
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
