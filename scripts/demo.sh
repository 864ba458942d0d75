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

step "A graph family member: an ENAS-style NMT seq2seq with attention (training graph)" \
  $devplace graph gen --family nmt --seed 7 -o $out/nmt7.json
step "A model of the zoo: Inception-v3 at batch 32" \
  $devplace graph model inception_v3 -o $out/inception_v3.json
step "What is in it" \
  $devplace graph info $out/inception_v3.json
