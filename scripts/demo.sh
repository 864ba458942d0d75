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

step "Import a real model: torchvision's ResNet-18 exported to ONNX (training graph at batch 32)" \
  $devplace graph import datasets/onnx/resnet18.onnx --batch 32 -o $out/resnet18.json
step "Place Inception-v3 on the DGX-1 the way Baechi's m-ETF does" \
  $devplace search --algo m-etf -g $out/inception_v3.json -t configs/topologies/dgx1-v100.yaml -o $out/inception_metf.json
step "Refine it with FlexFlow's MCMC (delta simulation, 2,000 proposals)" \
  $devplace search --algo mcmc --init $out/inception_metf.json --budget-evals 2000 --seed 1 \
    -g $out/inception_v3.json -t configs/topologies/dgx1-v100.yaml -o $out/inception_mcmc.json
step "Simulate the refined placement and write a Chrome trace (open out/demo/inception_trace.json in Perfetto)" \
  $devplace simulate -g $out/inception_v3.json -t configs/topologies/dgx1-v100.yaml -p $out/inception_mcmc.json \
    --trace $out/inception_trace.json
step "Place it zero-shot with the shipped learned policy (models/soap-context: GraphSAGE + Transformer, PPO and teachers; places and partitions)" \
  $devplace place -g $out/inception_v3.json -t configs/topologies/dgx1-v100.yaml -o $out/inception_learned.json
step "Compare the baselines on two models (writes results.md, results.csv, chart.png)" \
  $devplace compare --suite configs/suites/quick.yaml -o $out/quick
cat $out/quick/results.md
