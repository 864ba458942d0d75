#!/usr/bin/env bash
# Issue 19's generalisation protocol for a SOAP policy (docs/results.md "Learned placement and partitioning"):
# held-out members (nmt, transformer seeds 100-107, the shipped general policy's held-out set) on the training
# machine dgx1-v100, a held-out family (ptb seeds 100-103) on it, and held-out machines (dgx-h100, p100-4x4-ib) for
# nmt and transformer seeds 100-101. MEMBERS, FAMILY_SEEDS and TOPOLOGY_SEEDS override the seed lists. Per case:
# single, expert, data-parallel, Tofu-DP, MCMC with EVALS evaluations (seed 1), the shipped general policy
# (8-device machines only) and POLICY zero-shot (and fine-tuned with EVALS evaluations when FINETUNE=1). With
# SAMPLES=K the zero-shot row is the best of the greedy and K sampled placements (`devplace place --samples K
# --seed 1`, temperature SAMPLE_TEMPERATURE, default the policy's), named NAME-kK. With UNIFORM=1 the zero-shot and
# fine-tuned rows also try the fastest uniform sample split (`--uniform`, `devplace place`'s default, simulated
# while the environment is built), named NAME-u; without it they are the policy's own (`--no-uniform`).
# Usage: scripts/soap_eval.sh DEVPLACE POLICY OUT_DIR   (env: EVALS=2000, FINETUNE=0, ONLY="base"|"policy"|"",
#        NAME=soap: the policy's method name, SAMPLES=0, SAMPLE_TEMPERATURE, UNIFORM=0)
# Writes OUT_DIR/results.csv: case,topology,method,step_time_ms,oom.
set -euo pipefail
DEVPLACE=$1 POLICY=$2 OUT=$3
EVALS=${EVALS:-2000} FINETUNE=${FINETUNE:-0} ONLY=${ONLY:-} NAME=${NAME:-soap} SAMPLES=${SAMPLES:-0}
SAMPLING=()
if [ "$SAMPLES" != 0 ]; then
  SAMPLING=(--samples "$SAMPLES")
  [ -n "${SAMPLE_TEMPERATURE:-}" ] && SAMPLING+=(--sample-temperature "$SAMPLE_TEMPERATURE")
  NAME=$NAME-k$SAMPLES
fi
if [ "${UNIFORM:-0}" = 1 ]; then SAMPLING+=(--uniform); NAME=$NAME-u; else SAMPLING+=(--no-uniform); fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOPO=$ROOT/configs/topologies
mkdir -p "$OUT/graphs" "$OUT/p"
CSV=$OUT/results.csv
[ -f "$CSV" ] || echo "case,topology,method,step_time_ms,oom" > "$CSV"
gen() {  # family seed target -> graph path
  local f=$OUT/graphs/$1-$2.json
  if [ ! -f "$f" ]; then
    if [ "$3" = 0 ]; then "$DEVPLACE" graph gen --family "$1" --seed "$2" -o "$f" >/dev/null
    else "$DEVPLACE" graph gen --family "$1" --seed "$2" --target-ops "$3" -o "$f" >/dev/null; fi
  fi
  echo "$f"
}
row() {  # case topo method json
  local t oom
  t=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["step_time_ms"] if "step_time_ms" in d else 1e3 * d["step_time"], int(d["oom"]))' <<<"$4")
  echo "$1,$2,$3,${t% *},${t#* }" >> "$CSV"
}
run_case() {  # family seed target topology
  local g c t=$4
  g=$(gen "$1" "$2" "$3"); c=$1-$2
  local T=$TOPO/$t.yaml P=$OUT/p/$c-$t
  if [ "$ONLY" != policy ]; then
    for a in single expert data-parallel tofu-dp; do row "$c" "$t" "$a" "$("$DEVPLACE" search --algo $a -g "$g" -t "$T" -o "$P-$a.json" --json)"; done
    row "$c" "$t" "mcmc-$EVALS" "$("$DEVPLACE" search --algo mcmc --budget-evals "$EVALS" --seed 1 -g "$g" -t "$T" -o "$P-mcmc.json" --json)"
    if [ "$t" != p100-4x4-ib ]; then
      row "$c" "$t" general "$("$DEVPLACE" place --no-uniform -g "$g" -t "$T" -o "$P-general.json" --json)"
    fi
  fi
  if [ "$ONLY" != base ]; then
    row "$c" "$t" "$NAME" "$("$DEVPLACE" place --policy "$POLICY" -g "$g" -t "$T" "${SAMPLING[@]}" --seed 1 -o "$P-$NAME.json" --json)"
    if [ "$FINETUNE" = 1 ]; then
      row "$c" "$t" "$NAME-ft-$EVALS" "$("$DEVPLACE" place --policy "$POLICY" -g "$g" -t "$T" "${SAMPLING[@]}" --finetune-evals "$EVALS" --finetune-temperature 3 --seed 1 -o "$P-$NAME-ft.json" --json)"
    fi
  fi
}
for s in ${MEMBERS-100 101 102 103 104 105 106 107}; do run_case nmt $s 600 dgx1-v100; run_case transformer $s 0 dgx1-v100; done
for s in ${FAMILY_SEEDS-100 101 102 103}; do run_case ptb $s 400 dgx1-v100; done
for t in dgx-h100 p100-4x4-ib; do
  for s in ${TOPOLOGY_SEEDS-100 101}; do run_case nmt $s 600 $t; run_case transformer $s 0 $t; done
done
