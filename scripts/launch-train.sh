#!/usr/bin/env bash
# Starts N local ranks of `devplace train` as one data-parallel training group (docs/learning.md, "Distributed
# training"), setting the variables torchrun would: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK.
#
#   scripts/launch-train.sh -n N [--nodes M --node-rank K] [--master-addr HOST] [--master-port P] -- TRAIN-ARGS
#
# One machine:      scripts/launch-train.sh -n 2 -- --config configs/experiments/quick.yaml -o runs/quick
# Several machines: run the same command on each, K = 0 .. M-1, HOST = machine 0 as the others reach it:
#   scripts/launch-train.sh -n 4 --nodes 2 --node-rank K --master-addr HOST -- --config E.yaml -o RUN
# Rank = K * N + i for i = 0 .. N-1; WORLD_SIZE = M * N. Only rank 0 (on machine 0) writes RUN; resume by
# running the same command with --resume (any number of ranks). The program is $DEVPLACE, else
# build/apps/devplace. The other ranks' output lines are prefixed with "[rank r] ".
# Exit status: 0 when every local rank succeeded, else the status of the first local rank that failed.
set -euo pipefail

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

ranks=0 nodes=1 node_rank=0 master_addr=127.0.0.1 master_port=29500
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--nproc) ranks="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --node-rank) node_rank="$2"; shift 2 ;;
    --master-addr) master_addr="$2"; shift 2 ;;
    --master-port) master_port="$2"; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    *) echo "launch-train.sh: unknown option '$1' (arguments for devplace train go after --)" >&2; exit 2 ;;
  esac
done
for value in "$ranks" "$nodes" "$node_rank" "$master_port"; do
  case "$value" in ''|*[!0-9]*) echo "launch-train.sh: '$value' is not a number" >&2; exit 2 ;; esac
done
[ "$ranks" -ge 1 ] || { echo "launch-train.sh: -n N (ranks on this machine) is required" >&2; exit 2; }
if [ "$nodes" -lt 1 ] || [ "$node_rank" -ge "$nodes" ]; then
  echo "launch-train.sh: --node-rank must be in [0, --nodes)" >&2
  exit 2
fi
[ $# -gt 0 ] || { echo "launch-train.sh: no arguments for devplace train (put them after --)" >&2; exit 2; }

devplace="${DEVPLACE:-$(cd "$(dirname "$0")/.." && pwd)/build/apps/devplace}"
[ -x "$devplace" ] || { echo "launch-train.sh: $devplace: not found (build it, or set DEVPLACE)" >&2; exit 2; }

world=$((nodes * ranks))
pids=()
# Ctrl-C or a kill of the launcher stops its ranks (the ranks of other machines then fail within the timeout).
# shellcheck disable=SC2317  # invoked by the trap
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap 'stop; exit 130' INT TERM

for ((i = 0; i < ranks; i++)); do
  rank=$((node_rank * ranks + i))
  if [ "$rank" -eq 0 ]; then
    MASTER_ADDR="$master_addr" MASTER_PORT="$master_port" RANK="$rank" LOCAL_RANK="$i" WORLD_SIZE="$world" \
      "$devplace" train "$@" &
  else
    MASTER_ADDR="$master_addr" MASTER_PORT="$master_port" RANK="$rank" LOCAL_RANK="$i" WORLD_SIZE="$world" \
      "$devplace" train "$@" > >(sed -u "s/^/[rank $rank] /") 2> >(sed -u "s/^/[rank $rank] /" >&2) &
  fi
  pids+=("$!")
done

status=0
for ((i = 0; i < ranks; i++)); do
  code=0
  wait "${pids[$i]}" || code=$?
  if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$code
    echo "launch-train.sh: rank $((node_rank * ranks + i)) exited with status $code" >&2
  fi
done
exit "$status"
