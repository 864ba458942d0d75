#!/usr/bin/env bash
# End-to-end demo on built-in data: installs what is missing, builds, then walks through devplace's commands.
# Outputs go to out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
devplace=build/apps/devplace
out=out/demo
mkdir -p "$out"
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "A machine: DGX-1 with 8 V100s in the hybrid cube-mesh" \
  $devplace topo show configs/topologies/dgx1-v100.yaml
