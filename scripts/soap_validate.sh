#!/usr/bin/env bash
# The selection set of issue 19's learned policies (docs/results.md Seventh pass), disjoint from every test case
# and from ptb: the training families' validation members (nmt seeds 50-51 at 600 ops, transformer seeds 50-51; an
# experiment's eval set) on dgx1-v100 and k80-8-pcie, and two validation RNN language models (the zoo's rnnlm2 and
# rnnlm4 at batch 32; training uses their default batch of 64) on dgx1-v100. Per case: single device and the expert
# (ONLY=base), POLICY greedy (ONLY=policy, named NAME; the policy's own placement, `--no-uniform`; with UNIFORM=1
# `devplace place`'s default, which also keeps the fastest uniform split, named NAME-u). A run is chosen by these numbers only, never by ptb or the
# held-out topologies' test cases.
# SEEDS (default "50 51") lists the members' seeds, RNNLMS (default "rnnlm2 rnnlm4"; empty for none) the zoo models,
# LM_SEEDS (default none) validation members of the lstmlm training family (at 400 ops, as ptb's test members, on
# dgx1-v100), VAL_FAMILY_SEEDS (default none) members of the validation family cifar10 (natural size, on dgx1-v100):
# the generator's one family in neither training nor test, held out as ptb is in the test (docs/results.md
# Eleventh pass).
# Usage: scripts/soap_validate.sh DEVPLACE POLICY OUT_DIR
#        (env: ONLY="base"|"policy"|"", NAME=soap, UNIFORM=0, SEEDS, RNNLMS, LM_SEEDS, VAL_FAMILY_SEEDS)
# Writes OUT_DIR/validation.csv (case,topology,method,step_time_ms,oom); scripts/soap_summary.py reads it.
set -euo pipefail
DEVPLACE=$1 POLICY=$2 OUT=$3
ONLY=${ONLY:-} NAME=${NAME:-soap} SEEDS=${SEEDS:-50 51} RNNLMS=${RNNLMS-rnnlm2 rnnlm4}
UNIFORM_FLAG=--no-uniform
if [ "${UNIFORM:-0}" = 1 ]; then UNIFORM_FLAG=--uniform; NAME=$NAME-u; fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/vgraphs" "$OUT/vp"
CSV=$OUT/validation.csv
[ -f "$CSV" ] || echo "case,topology,method,step_time_ms,oom" > "$CSV"
row() {  # case topo method json
  local t
  t=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["step_time_ms"] if "step_time_ms" in d else 1e3 * d["step_time"], int(d["oom"]))' <<<"$4")
  echo "$1,$2,$3,${t% *},${t#* }" >> "$CSV"
}
run_case() {  # case graph topology
  local T=$ROOT/configs/topologies/$3.yaml P=$OUT/vp/$1-$3
  if [ "$ONLY" != policy ]; then
    for a in single expert; do row "$1" "$3" "$a" "$("$DEVPLACE" search --algo $a -g "$2" -t "$T" -o "$P-$a.json" --json)"; done
  fi
  if [ "$ONLY" != base ]; then
    row "$1" "$3" "$NAME" "$("$DEVPLACE" place --policy "$POLICY" "$UNIFORM_FLAG" -g "$2" -t "$T" --seed 1 -o "$P-$NAME.json" --json)"
  fi
}
for s in $SEEDS; do
  for f in nmt transformer; do
    g=$OUT/vgraphs/$f-$s.json
    if [ ! -f "$g" ]; then
      if [ $f = nmt ]; then "$DEVPLACE" graph gen --family nmt --seed $s --target-ops 600 -o "$g" >/dev/null
      else "$DEVPLACE" graph gen --family $f --seed $s -o "$g" >/dev/null; fi
    fi
    for t in dgx1-v100 k80-8-pcie; do run_case "$f-$s" "$g" $t; done
  done
done
for m in $RNNLMS; do
  g=$OUT/vgraphs/$m-b32.json
  [ -f "$g" ] || "$DEVPLACE" graph model $m --batch 32 -o "$g" >/dev/null
  run_case "$m-b32" "$g" dgx1-v100
done
for s in ${LM_SEEDS:-}; do
  g=$OUT/vgraphs/lstmlm-$s.json
  [ -f "$g" ] || "$DEVPLACE" graph gen --family lstmlm --seed "$s" --target-ops 400 -o "$g" >/dev/null
  run_case "lstmlm-$s" "$g" dgx1-v100
done
for s in ${VAL_FAMILY_SEEDS:-}; do
  g=$OUT/vgraphs/cifar10-$s.json
  [ -f "$g" ] || "$DEVPLACE" graph gen --family cifar10 --seed "$s" -o "$g" >/dev/null
  run_case "cifar10-$s" "$g" dgx1-v100
done
