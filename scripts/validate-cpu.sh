#!/usr/bin/env bash
# The simulator validation of docs/results.md ("Simulator validation", issue 21) in one command: plain placements,
# strategies that split ops and their two-process twins on this machine's two CPU cores, then a few diagnostic
# runs that set per-device and per-collective measured times against the simulated ones.
# Usage: scripts/validate-cpu.sh [OUT_DIR] [SUITE]   (defaults: out/validate-cpu-all,
#        configs/suites/validate-cpu-all.yaml; env: DEVPLACE=build/apps/devplace, MAX_LOAD=0.5 (per core): the
#        load average above which it waits, up to WAIT_S=600 seconds, for the machine to quieten; FORCE=1 runs anyway)
# Writes OUT_DIR/{summary.md,results.csv,scatter.png,...} (devplace validate) and OUT_DIR/diagnose/*.txt, and
# OUT_DIR/load.txt with the load before and after. Wall-clock step times are only meaningful on an idle machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/out/validate-cpu-all}
SUITE=${2:-$ROOT/configs/suites/validate-cpu-all.yaml}
DEVPLACE=${DEVPLACE:-$ROOT/build/apps/devplace}
MAX_LOAD=${MAX_LOAD:-0.5} WAIT_S=${WAIT_S:-600} FORCE=${FORCE:-0}
[ -x "$DEVPLACE" ] || { echo "validate-cpu.sh: $DEVPLACE not found (build it: cmake --build build --target devplace)" >&2; exit 1; }
cores=$(nproc)
load() { cut -d' ' -f1 /proc/loadavg; }
busy() { awk -v l="$(load)" -v c="$cores" -v m="$MAX_LOAD" 'BEGIN { exit !(l > c * m) }'; }
waited=0
while busy && [ "$FORCE" != 1 ] && [ "$waited" -lt "$WAIT_S" ]; do
  echo "validate-cpu.sh: load average $(load) on $cores cores; waiting for it to fall below $(awk -v c="$cores" -v m="$MAX_LOAD" 'BEGIN{print c*m}')" >&2
  sleep 30; waited=$((waited + 30))
done
if busy && [ "$FORCE" != 1 ]; then
  echo "validate-cpu.sh: the machine is still loaded ($(uptime)); FORCE=1 runs anyway, but the numbers will measure the load" >&2
  exit 1
fi
mkdir -p "$OUT/diagnose"
echo "before: $(uptime)" > "$OUT/load.txt"
"$DEVPLACE" validate --suite "$SUITE" -o "$OUT"
echo "after validate: $(uptime)" >> "$OUT/load.txt"

# Diagnostics on the first model of the suite: one placement and one split strategy, in one process and in two,
# with the validation's calibrated machine and profiled costs (per device: busy and copying, measured against
# simulated; per collective: measured span and busy time against the simulated time alone).
G=$OUT/diagnose/ptb.json
"$DEVPLACE" graph gen --family ptb --seed 0 --target-ops 300 -o "$G" >/dev/null
T=$OUT/topology-calibrated.yaml T2=$OUT/topology-calibrated-2p.yaml
C=$(ls "$OUT"/costs-ptb*.json | head -1)
for algo in round-robin data-parallel; do
  "$DEVPLACE" search --algo "$algo" -g "$G" -t "$T" --costs "$C" --seed 1 -o "$OUT/diagnose/$algo.json" >/dev/null
  "$DEVPLACE" run -g "$G" -t "$T" -p "$OUT/diagnose/$algo.json" --costs "$C" --repeats 9 \
    --op-csv "$OUT/diagnose/$algo-ops.csv" > "$OUT/diagnose/$algo.txt" 2>&1
  # --json: every collective's measured span and busy time next to its simulated time alone
  "$DEVPLACE" run -g "$G" -t "$T" -p "$OUT/diagnose/$algo.json" --costs "$C" --repeats 9 --json \
    > "$OUT/diagnose/$algo-run.json" 2>/dev/null
  if [ -f "$T2" ]; then
    "$DEVPLACE" run -g "$G" -t "$T2" -p "$OUT/diagnose/$algo.json" --costs "$C" --repeats 9 --processes 2 \
      > "$OUT/diagnose/$algo-x2p.txt" 2>&1
  fi
done
echo "after diagnostics: $(uptime)" >> "$OUT/load.txt"
cat "$OUT/load.txt"
echo "summary: $OUT/summary.md; diagnostics: $OUT/diagnose/"
